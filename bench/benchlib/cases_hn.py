"""bench/run's hn case: the 500-story Hacker News fan-out with latency injected, Freshet against
the physical limit and its peers (aiohttp, Node fetch, one request after another)."""
from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from pathlib import Path

from .common import OUT, PEERS, fail, fmt_s, fmt_x, log, med, table
from .processes import timed_wait4
from .simulator import Simulator


def case_hn(sim: Simulator, bins, python: Path, args, notes: list[str]):
    L, C, N = args.latency, args.concurrency, args.limit
    limit_s = L / 1000 * (1 + math.ceil(N / C))
    for route in ("/v0/item", "/v0/topstories"):
        sim.latency(route, L)
    base = sim.url + "/v0"
    homes = Path(tempfile.mkdtemp(prefix="hn-homes-", dir=OUT))

    def freshet_cmd(i):
        home = homes / f"run{i}"
        env = dict(os.environ, FRESHET_HOME=str(home), FRESHET_HN_URL=base, NO_COLOR="1")
        return [str(bins["freshet"]), "hn", "top", "--limit", str(N), "--concurrency", str(C), "--json"], env

    peer_env = dict(os.environ)
    clients = [
        ("Freshet (`freshet hn`)", "freshet", freshet_cmd),
        ("Python aiohttp", "aiohttp", lambda i: ([str(python), str(PEERS / "hn_aiohttp.py"), "--base", base,
                                                  "--limit", str(N), "--concurrency", str(C)], peer_env)),
        ("Node.js fetch", "node", lambda i: (["node", str(PEERS / "hn_fetch.mjs"), "--base", base,
                                              "--limit", str(N), "--concurrency", str(C)], peer_env)),
    ]
    samples = {key: {"wall": [], "work": [], "rss": []} for _, key, _ in clients}
    samples["tutorial"] = {"wall": [], "work": [], "rss": []}
    in_flight: list[int] = []  # the simulator's maxInFlight after each `freshet hn` run

    def once(key, cmd, env, record: bool):
        before = sim.request_count()
        # wait4(2) gives the wall time, the exit status and the peak RSS: no /usr/bin/time forked
        # and exec'd in front of each client, adding its own start to a time compared with the
        # physical limit.
        wall, status, stdout, stderr, _, peak = timed_wait4(cmd, env=env, timeout=300)
        sent = sim.request_count() - before
        if status != 0:
            fail(f"hn {key}: exit {status}: {stderr[-1500:]}")
        if key == "freshet":
            stories = len(json.loads(stdout))
            work = None
        else:
            report = json.loads(stdout.strip().splitlines()[-1])
            stories, work = report["stories"], report["seconds"]
        if sent != N + 1:
            notes.append(f"hn {key}: the simulator saw {sent} requests, expected {N + 1}.")
        if record:
            samples[key]["wall"].append(wall)
            samples[key]["work"].append(work)
            samples[key]["rss"].append(peak)
        if key == "freshet":  # the log reset below also resets the simulator's high-water mark
            in_flight.append(sim.request("GET", "/_sim/stats")["maxInFlight"])
        sim.reset_log()
        return wall, stories

    log(f"hn fan-out: {N} stories, {L} ms per request, concurrency {C}; physical limit {fmt_s(limit_s)}")
    for _, key, make in clients:  # one untimed warm-up each (page cache, JIT, pyc)
        once(key, *make("warmup"), record=False)
    for i in range(args.runs):
        for _, key, make in clients:
            wall, stories = once(key, *make(i), record=True)
            log(f"  run {i + 1}: {key:8} {fmt_s(wall):>8}  ({stories} stories)")
    # The tutorial shape: one request after another (Python urllib), full count.
    tutorial_cmd = [str(python), str(PEERS / "hn_tutorial.py"), "--base", base, "--limit", str(N)]
    for i in range(args.tutorial_runs):
        wall, stories = once("tutorial", tutorial_cmd, peer_env, record=True)
        log(f"  run {i + 1}: tutorial {fmt_s(wall):>8}  ({stories} stories)")
    for route in ("/v0/item", "/v0/topstories"):
        sim.latency(route, 0)
    shutil.rmtree(homes, ignore_errors=True)
    in_flight = max(in_flight) if in_flight else None
    log(f"  freshet hn --concurrency {C}: at most {in_flight} requests in flight at the simulator")

    freshet = med(samples["freshet"]["wall"])
    rows = [["physical limit L × (1 + ⌈N/C⌉)", fmt_s(limit_s), "—", "1.00×", "—", "—", "—"]]
    names = {"freshet": "Freshet (`freshet hn --json`, fresh FRESHET_HOME)", "aiohttp": "Python aiohttp (hn_aiohttp.py)",
             "node": "Node.js fetch (hn_fetch.mjs)", "tutorial": "tutorial shape: one request after another (hn_tutorial.py, urllib)"}
    result = {"limit": limit_s, "L": L, "C": C, "N": N, "in_flight": in_flight}
    for key in ("freshet", "aiohttp", "node", "tutorial"):
        s = samples[key]
        wall, work, rss = med(s["wall"]), med(s["work"]), med(s["rss"])
        result[key] = {"wall": wall, "work": work, "rss_kib": rss, "runs": len(s["wall"]),
                       "min": min(s["wall"]), "max": max(s["wall"])}
        rows.append([names[key], f"{fmt_s(wall)} ({fmt_s(min(s['wall']))}–{fmt_s(max(s['wall']))})",
                     fmt_s(work) if key != "freshet" else "—", fmt_x(wall / limit_s),
                     "—" if key == "freshet" else fmt_x(wall / freshet),
                     "—" if key == "freshet" or math.isnan(work) else fmt_x(work / freshet),
                     f"{rss / 1024:.0f} MiB" if not math.isnan(rss) else "—"])
    lines = [f"### HN fan-out — {N} stories, {L} ms injected per request (list and items), concurrency {C}", "",
             f"Median of {args.runs} runs (tutorial shape: {args.tutorial_runs}), range in brackets, after one untimed warm-up run "
             "per client. *Process* is whole-process wall time (start to exit, including interpreter start-up and, "
             "for Freshet, opening SQLite and storing every response in the HTTP cache); *fan-out only* is the time the peer "
             "script measures itself after its imports. The ÷ columns are the peer's time divided by Freshet's process time: above 1× "
             "Freshet is faster.", ""]
    lines += table(["client", "process (median, range)", "fan-out only", "÷ limit", "process ÷ Freshet",
                    "fan-out only ÷ Freshet", "peak RSS"], rows, "lrrrrrr")
    lines += ["", f"Requests in flight at the simulator, most at once, during `freshet hn --concurrency {C}` "
              f"(the simulator's `/_sim/stats` maxInFlight, read after each Freshet run and reset before the next client): **{in_flight}**."]
    if in_flight is not None and in_flight < min(C, N):
        notes.append(f"hn: `freshet hn --concurrency {C}` had at most {in_flight} requests in flight, not {min(C, N)}: "
                     "something below the story loader caps the fan-out (AsyncHTTPClient's pool allows "
                     "8 HTTP/1.1 connections per host unless configured otherwise).")
    return result, lines
