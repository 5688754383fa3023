#!/usr/bin/env python3
"""HN fan-out, "the tutorial shape": one request after another, Python standard library only.

    hn_tutorial.py --base http://127.0.0.1:PORT/v0 [--limit 500]

The loop most introductions to the Hacker News API show:

    ids = get("topstories.json")
    for id in ids[:limit]: items.append(get(f"item/{id}.json"))

with urllib.request (a new connection per request, as urlopen does; proxies ignored). Prints one JSON line:
{"client":"tutorial","stories":N,"errors":E,"seconds":S}. Bounded: 30 s per request.
"""
import argparse
import json
import sys
import time
import urllib.request


OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only: no proxies


def get(url: str):
    with OPENER.open(url, timeout=30) as response:
        return json.load(response)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--limit", type=int, default=500)
    args = parser.parse_args()
    start = time.perf_counter()
    ids = get(f"{args.base}/topstories.json")[: args.limit]
    items, errors = [], 0
    for story_id in ids:
        try:
            items.append(get(f"{args.base}/item/{story_id}.json"))
        except Exception:  # noqa: BLE001 - counted and reported
            errors += 1
    result = {"client": "tutorial", "stories": sum(1 for item in items if item), "errors": errors,
              "seconds": round(time.perf_counter() - start, 4)}
    print(json.dumps(result))
    sys.exit(0 if errors == 0 else 2)
