"""bench/run's feed case: `freshet feed` within freshness and with --refresh (bytes counted on the
wire), and time to first output from the store with the network unreachable."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from .common import OUT, fail, fmt_ms, log, med, table
from .processes import first_line_time, timed
from .simulator import CountingRelay, Simulator


def case_feed(sim: Simulator, bins, args, notes: list[str]):
    home = Path(tempfile.mkdtemp(prefix="feed-home-", dir=OUT))
    repo = "ReactiveX/RxSwift"
    relay = CountingRelay(sim.url)  # every run goes through it, so the cache key (the URL) stays the same
    env = dict(os.environ, FRESHET_HOME=str(home), FRESHET_GITHUB_URL=relay.url, NO_COLOR="1")
    env.pop("GITHUB_TOKEN", None)
    env.pop("GH_TOKEN", None)
    freshet = str(bins["freshet"])

    def exchange(cmd):
        sim.reset_log()
        relay.take()
        wall, result, _ = timed(cmd, env=env, timeout=60)
        sent, received = relay.take()
        entries = [e for e in sim.log_entries() if not e["path"].startswith("/_sim/")]
        if result.returncode != 0:
            fail(f"feed: exit {result.returncode}: {result.stderr[-1000:]}")
        return wall, entries, result, sent, received

    def sample():
        return {"wall": [], "bytes": [], "wire": [], "sent": [], "requests": [], "statuses": set()}

    try:
        log(f"warm feed: freshet feed {repo}")
        cold_wall, cold_entries, cold, cold_sent, cold_received = exchange([freshet, "feed", repo])
        if not cold.stdout.strip():
            fail("feed: the first run printed nothing")
        fresh, revalidated = sample(), sample()
        for i in range(args.feed_runs):
            for s, extra in ((fresh, []), (revalidated, ["--refresh"])):
                wall, entries, _, sent, received = exchange([freshet, "feed", repo] + extra)
                s["wall"].append(wall)
                s["bytes"].append(sum(e["bytesSent"] for e in entries))
                s["wire"].append(received)
                s["sent"].append(sent)
                s["requests"].append(len(entries))
                s["statuses"].update(e["status"] for e in entries)
            log(f"  run {i + 1}: fresh {fmt_ms(fresh['wall'][-1])} ({fresh['requests'][-1]} requests, "
                f"{fresh['wire'][-1]} bytes in), --refresh {fmt_ms(revalidated['wall'][-1])} "
                f"({revalidated['requests'][-1]} requests, {revalidated['wire'][-1]} bytes in)")
    finally:
        relay.stop()
    if any(fresh["requests"]):
        notes.append(f"feed: a run within freshness made requests: {fresh['requests']}.")
    if revalidated["statuses"] != {304}:
        notes.append(f"feed: --refresh answered with statuses {sorted(revalidated['statuses'])}, expected only 304.")

    # The network unreachable: the relay is stopped, so the same URL (and cache key) now refuses
    # connections — what a user sees when the network goes away after the last run.
    offline_env = env
    offline_cmd = [freshet, "feed", repo, "--refresh", "--allow-stale"]
    tty_first, tty_total, pipe_first, pipe_total, statuses = [], [], [], [], set()
    for i in range(args.feed_runs):
        first, total, status, line = first_line_time(offline_cmd, env=offline_env, tty=True)
        tty_first.append(first)
        tty_total.append(total)
        statuses.add(status)
        first, total, status, _ = first_line_time(offline_cmd, env=offline_env, tty=False)
        pipe_first.append(first)
        pipe_total.append(total)
        statuses.add(status)
        log(f"  offline run {i + 1}: first line {fmt_ms(tty_first[-1])} (terminal), {fmt_ms(pipe_first[-1])} (pipe)")
    if statuses != {0}:
        notes.append(f"feed offline: exit statuses {sorted(statuses)} (expected 0 with --allow-stale).")
    shutil.rmtree(home, ignore_errors=True)

    result = {"fresh_wall": med(fresh["wall"]), "fresh_bytes": med(fresh["bytes"]), "fresh_wire": med(fresh["wire"]),
              "refresh_wall": med(revalidated["wall"]), "refresh_bytes": med(revalidated["bytes"]),
              "refresh_wire": med(revalidated["wire"]), "refresh_sent": med(revalidated["sent"]),
              "cold_wall": cold_wall, "cold_bytes": sum(e["bytesSent"] for e in cold_entries), "cold_wire": cold_received,
              "offline_tty_first": med(tty_first), "offline_pipe_first": med(pipe_first),
              "offline_tty_total": med(tty_total), "offline_pipe_total": med(pipe_total)}
    rows = [
        ["first run (empty store; context)", fmt_ms(cold_wall), str(len(cold_entries)), f"{cold_received:,}",
         f"{result['cold_bytes']:,}", f"{cold_sent:,}"],
        ["within freshness (no request)", fmt_ms(result["fresh_wall"]), str(round(med(fresh["requests"]))),
         f"{result['fresh_wire']:,.0f}", f"{result['fresh_bytes']:,.0f}", f"{med(fresh['sent']):,.0f}"],
        ["`--refresh` (conditional request → 304)", fmt_ms(result["refresh_wall"]), str(round(med(revalidated["requests"]))),
         f"{result['refresh_wire']:,.0f}", f"{result['refresh_bytes']:,.0f}", f"{result['refresh_sent']:,.0f}"],
    ]
    lines = [f"### Warm feed — `freshet feed {repo}` (50 events)", "",
             f"Whole-process wall time, median of {args.feed_runs} runs (the first run only once), stdout a pipe. "
             "Bytes received on the wire are counted by a relay in front of the simulator (status line and headers "
             "included); body bytes come from the simulator's log (`bytesSent`).", ""]
    lines += table(["run", "wall time", "requests", "bytes received (wire)", "of which body", "bytes sent"], rows, "lrrrrr")
    lines += ["", f"Network unreachable (the relay stopped: the same URL now refuses connections; `--refresh --allow-stale`), "
              f"median of {args.feed_runs}:", ""]
    lines += table(["stdout", "time to first output line", "process exit"],
                   [["a terminal (pty): stored events print before the refresh", fmt_ms(result["offline_tty_first"]), fmt_ms(result["offline_tty_total"])],
                    ["a pipe: printed once the refresh has failed (served stale from the cache)", fmt_ms(result["offline_pipe_first"]), fmt_ms(result["offline_pipe_total"])]],
                   "lrr")
    return result, lines
