"""What the Python client-throughput peers (throughput_aiohttp.py, throughput_httpx.py) share: the
command line, the warm-up and timed runs at most C in flight, and the JSON line they print.

    throughput_<client>.py --url URL [--requests 20000] [--concurrency 32] [--warmup W]

Same shape as freshet-bench-client: W untimed warm-up GETs (default 2×C), then N timed GETs,
request i to URL&n=i so none are identical, at most C in flight. Prints one JSON line:
{"mode":…,"requests":N,"ok":…,"errors":…,"seconds":…,"rps":…}. Bounded: 300 s in all.
"""
import argparse
import asyncio
import json
import sys
import time


async def run(get, url: str, first: int, count: int, concurrency: int) -> int:
    """GETs URL&n=first … first+count-1, at most `concurrency` at once; `get(url)` answers whether the
    response was a 200 with a body. Returns the number of failures (exceptions included)."""
    separator = "&" if "?" in url else "?"
    next_index = 0
    failures = 0

    async def worker() -> None:
        nonlocal next_index, failures
        while next_index < count:
            i = next_index
            next_index += 1
            try:
                if not await get(f"{url}{separator}n={first + i}"):
                    failures += 1
            except Exception:  # noqa: BLE001 - counted and reported
                failures += 1

    await asyncio.gather(*(worker() for _ in range(min(concurrency, count))))
    return failures


async def measure(mode: str, get, args) -> dict:
    """The warm-up, then the timed run; the figures the peer prints."""
    warmup = args.warmup if args.warmup is not None else 2 * args.concurrency
    warmup_failures = await run(get, args.url, 1_000_000_000, warmup, args.concurrency)
    start = time.perf_counter()
    failures = await run(get, args.url, 0, args.requests, args.concurrency)
    seconds = time.perf_counter() - start
    return {"mode": mode, "requests": args.requests, "ok": args.requests - failures, "errors": failures,
            "warmupErrors": warmup_failures, "seconds": round(seconds, 4), "rps": round(args.requests / seconds, 1)}


def main(client) -> None:
    """Parses the command line, runs `client(args)` (a coroutine returning measure()'s figures) within
    300 s, prints its JSON line and exits 0 when nothing failed, else 2."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--warmup", type=int)
    args = parser.parse_args()
    result = asyncio.run(asyncio.wait_for(client(args), 300))
    print(json.dumps(result))
    sys.exit(0 if result["errors"] == 0 and result["warmupErrors"] == 0 else 2)
