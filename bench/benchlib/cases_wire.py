"""bench/run's wire case: the bytes a cold `freshet feed` and a cold `freshet hn --limit N` receive,
with transparent compression (gzip asked for, decoded above the cache), against the same requests
sent again without `Accept-Encoding` — the identity bytes freshet received before it asked for gzip.
Deterministic (the simulator's data is seeded), so one run is the figure."""
from __future__ import annotations

import os
import shutil
import tempfile
import urllib.request
from pathlib import Path

from .common import OPENER, OUT, fail, fmt_x, log, table
from .processes import timed
from .simulator import CountingRelay, Simulator

WIRE_TARGET = 0.25  # issue 33: the cold feed's body bytes with gzip, as a share of identity's


def case_wire(sim: Simulator, bins, args, notes: list[str]):
    relay = CountingRelay(sim.url)  # counts status lines and headers too
    freshet = str(bins["freshet"])
    repo = "ReactiveX/RxSwift"
    runs = {
        "feed": ([freshet, "feed", repo], {"FRESHET_GITHUB_URL": relay.url}, f"cold `freshet feed {repo}`"),
        "hn": ([freshet, "hn", "--limit", str(args.limit), "--json"], {"FRESHET_HN_URL": relay.url + "/v0"},
               f"cold `freshet hn --limit {args.limit}`"),
    }
    results = {}
    try:
        for key, (cmd, urls, label) in runs.items():
            home = Path(tempfile.mkdtemp(prefix="wire-home-", dir=OUT))
            env = dict(os.environ, FRESHET_HOME=str(home), NO_COLOR="1", **urls)
            for token in ("GITHUB_TOKEN", "GH_TOKEN"):
                env.pop(token, None)
            sim.reset_log()
            relay.take()
            _, result, _ = timed(cmd, env=env, timeout=120)
            if result.returncode != 0:
                fail(f"wire {key}: exit {result.returncode}: {result.stderr[-1000:]}")
            _, gzip_wire = relay.take()
            entries = [e for e in sim.log_entries() if not e["path"].startswith("/_sim/")]
            gzip_body = sum(e["bytesSent"] for e in entries)
            encoded = sum(1 for e in entries if "gzip" in e["headers"].get("accept-encoding", ""))
            # The same requests without Accept-Encoding, as freshet sent them before (its User-Agent
            # and Accept), one connection each.
            sim.reset_log()
            relay.take()
            for e in entries:
                headers = {name: e["headers"][name] for name in ("user-agent", "accept") if name in e["headers"]}
                request = urllib.request.Request(relay.url + e["path"], headers=headers)
                with OPENER.open(request, timeout=30) as response:
                    response.read()
            _, identity_wire = relay.take()
            identity_body = sum(e["bytesSent"] for e in sim.log_entries() if not e["path"].startswith("/_sim/"))
            shutil.rmtree(home, ignore_errors=True)
            results[key] = {"label": label, "requests": len(entries), "asked": encoded,
                            "gzip_body": gzip_body, "identity_body": identity_body,
                            "gzip_wire": gzip_wire, "identity_wire": identity_wire}
            log(f"wire {key}: {len(entries)} requests ({encoded} asking for gzip), body {gzip_body} bytes vs "
                f"{identity_body} identity, wire {gzip_wire} vs {identity_wire}")
    finally:
        relay.stop()
    for key, r in results.items():
        if r["asked"] != r["requests"]:
            notes.append(f"wire {key}: {r['requests'] - r['asked']} of {r['requests']} requests did not ask for gzip.")
    rows = [[r["label"], str(r["requests"]), f"{r['identity_body']:,}", f"{r['gzip_body']:,}",
             fmt_x(r["gzip_body"] / max(r["identity_body"], 1)), f"{r['identity_wire']:,}", f"{r['gzip_wire']:,}",
             fmt_x(r["gzip_wire"] / max(r["identity_wire"], 1))] for r in results.values()]
    lines = ["### Bytes on the wire — transparent compression", "",
             "Body bytes (the simulator's log) and everything received (a counting relay: status lines and headers "
             "too), for a cold run with gzip asked for, against the same requests sent again without "
             "`Accept-Encoding`. Deterministic: one run.", ""]
    lines += table(["run", "requests", "identity body", "gzip body", "ratio", "identity wire", "gzip wire", "ratio"],
                   rows, "lrrrrrrr")
    return results, lines
