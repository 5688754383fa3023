#!/usr/bin/env python3
"""HN fan-out peer: aiohttp, the same bounded fan-out as `freshet hn --limit N --concurrency C`.

    hn_aiohttp.py --base http://127.0.0.1:PORT/v0 [--limit 500] [--concurrency 32]

GETs BASE/topstories.json, then BASE/item/{id}.json for the first LIMIT ids with at most
CONCURRENCY in flight (one aiohttp session, connector limit = CONCURRENCY, keep-alive), decodes
every item as JSON and keeps the list's order. Prints one JSON line:
{"client":"aiohttp","stories":N,"errors":E,"seconds":S} where S is the fan-out alone
(after the imports and the event loop started). Bounded: 30 s per request, 300 s in all.
"""
import argparse
import asyncio
import json
import sys
import time

import aiohttp


async def main(base: str, limit: int, concurrency: int) -> dict:
    start = time.perf_counter()
    timeout = aiohttp.ClientTimeout(total=30)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        async with session.get(f"{base}/topstories.json") as response:
            response.raise_for_status()
            ids = (await response.json())[:limit]
        items: list = [None] * len(ids)
        errors = 0
        next_index = 0

        async def worker() -> None:
            nonlocal next_index, errors
            while next_index < len(ids):
                i = next_index
                next_index += 1
                try:
                    async with session.get(f"{base}/item/{ids[i]}.json") as response:
                        response.raise_for_status()
                        items[i] = await response.json()
                except Exception:  # noqa: BLE001 - counted and reported
                    errors += 1

        await asyncio.gather(*(worker() for _ in range(min(concurrency, len(ids)))))
    stories = sum(1 for item in items if item)
    return {"client": "aiohttp", "stories": stories, "errors": errors, "seconds": round(time.perf_counter() - start, 4)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--limit", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    result = asyncio.run(asyncio.wait_for(main(args.base, args.limit, args.concurrency), 300))
    print(json.dumps(result))
    sys.exit(0 if result["errors"] == 0 else 2)
