#!/usr/bin/env python3
"""Client-throughput peer: httpx.AsyncClient (HTTP/1.1, max_connections = CONCURRENCY, keep-alive).

    throughput_httpx.py --url URL [--requests 20000] [--concurrency 32] [--warmup W]

Same shape as freshet-bench-client: W untimed warm-up GETs (default 2×C), then N timed GETs,
request i to URL&n=i so none are identical, at most C in flight. Prints one JSON line:
{"mode":"httpx","requests":N,"ok":…,"errors":…,"seconds":…,"rps":…}. Bounded: 30 s per
request, 300 s in all. The runs, the command line and the output are throughput_common.py's.
"""
import httpx

import throughput_common


async def main(args) -> dict:
    limits = httpx.Limits(max_connections=args.concurrency, max_keepalive_connections=args.concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30, trust_env=False) as client:
        async def get(url: str) -> bool:
            response = await client.get(url, headers={"Accept": "application/json"})
            return response.status_code == 200 and bool(response.content)

        return await throughput_common.measure("httpx", get, args)


if __name__ == "__main__":
    throughput_common.main(main)
