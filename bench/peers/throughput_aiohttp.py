#!/usr/bin/env python3
"""Client-throughput peer: aiohttp (one session, connector limit = CONCURRENCY, keep-alive).

    throughput_aiohttp.py --url URL [--requests 20000] [--concurrency 32] [--warmup W]

Same shape as freshet-bench-client: W untimed warm-up GETs (default 2×C), then N timed GETs,
request i to URL&n=i so none are identical, at most C in flight. Prints one JSON line:
{"mode":"aiohttp","requests":N,"ok":…,"errors":…,"seconds":…,"rps":…}. Bounded: 30 s per
request, 300 s in all. The runs, the command line and the output are throughput_common.py's.
"""
import aiohttp

import throughput_common


async def main(args) -> dict:
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=args.concurrency), timeout=timeout) as session:
        async def get(url: str) -> bool:
            async with session.get(url, headers={"Accept": "application/json"}) as response:
                body = await response.read()
                return response.status == 200 and bool(body)

        return await throughput_common.measure("aiohttp", get, args)


if __name__ == "__main__":
    throughput_common.main(main)
