#!/usr/bin/env python3
"""Client-throughput peer: aiohttp (one session, connector limit = CONCURRENCY, keep-alive).

    throughput_aiohttp.py --url URL [--requests 20000] [--concurrency 32] [--warmup W]

Same shape as freshet-bench-client: W untimed warm-up GETs (default 2×C), then N timed GETs,
request i to URL&n=i so none are identical, at most C in flight. Prints one JSON line:
{"mode":"aiohttp","requests":N,"ok":…,"errors":…,"seconds":…,"rps":…}. Bounded: 30 s per
request, 300 s in all.
"""
import argparse
import asyncio
import json
import sys
import time

import aiohttp


async def run(session, url: str, first: int, count: int, concurrency: int) -> int:
    separator = "&" if "?" in url else "?"
    next_index = 0
    failures = 0

    async def worker() -> None:
        nonlocal next_index, failures
        while next_index < count:
            i = next_index
            next_index += 1
            try:
                async with session.get(f"{url}{separator}n={first + i}", headers={"Accept": "application/json"}) as response:
                    body = await response.read()
                    if response.status != 200 or not body:
                        failures += 1
            except Exception:  # noqa: BLE001 - counted and reported
                failures += 1

    await asyncio.gather(*(worker() for _ in range(min(concurrency, count))))
    return failures


async def main(args) -> dict:
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=args.concurrency), timeout=timeout) as session:
        warmup = args.warmup if args.warmup is not None else 2 * args.concurrency
        warmup_failures = await run(session, args.url, 1_000_000_000, warmup, args.concurrency)
        start = time.perf_counter()
        failures = await run(session, args.url, 0, args.requests, args.concurrency)
        seconds = time.perf_counter() - start
    return {"mode": "aiohttp", "requests": args.requests, "ok": args.requests - failures, "errors": failures,
            "warmupErrors": warmup_failures, "seconds": round(seconds, 4), "rps": round(args.requests / seconds, 1)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--warmup", type=int)
    args = parser.parse_args()
    result = asyncio.run(asyncio.wait_for(main(args), 300))
    print(json.dumps(result))
    sys.exit(0 if result["errors"] == 0 and result["warmupErrors"] == 0 else 2)
