"""bench/run's throughput case: small GETs on keep-alive through Freshet's full middleware stack,
raw AsyncHTTPClient, URLSession and the Python and Node peers."""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

from .common import OUT, PEERS, ROOT, BenchError, fmt_x, log, med, run, table
from .processes import timed
from .simulator import Simulator


def case_throughput(sim: Simulator, bins, python: Path, args, notes: list[str]):
    N, C = args.requests, args.concurrency
    url = sim.url + "/_sim/bytes?size=200"
    client = str(bins["freshet-bench-client"])
    common = ["--url", url, "--requests", str(N), "--concurrency", str(C)]
    clients = [
        ("freshet", "Freshet: APIClient.live, full middleware chain, no cache", [client, "--mode", "freshet"] + common),
        ("ahc", "raw AsyncHTTPClient (Freshet's shared-client configuration)", [client, "--mode", "ahc"] + common),
        ("urlsession", "URLSession (FoundationNetworking)", [client, "--mode", "urlsession"] + common),
        ("httpx", "Python httpx (AsyncClient)", [str(python), str(PEERS / "throughput_httpx.py")] + common),
        ("aiohttp", "Python aiohttp", [str(python), str(PEERS / "throughput_aiohttp.py")] + common),
        ("node", "Node.js fetch (undici)", ["node", str(PEERS / "throughput_fetch.mjs")] + common),
    ]
    rps = {key: [] for key, _, _ in clients}
    cpu = {key: [] for key, _, _ in clients}  # client process CPU seconds (user + system) per run
    failed = {}
    log(f"client throughput: {N} GETs of {url.replace(sim.url, '')} at concurrency {C}")
    for i in range(args.runs):
        for key, _, cmd in clients:
            if key in failed:
                continue
            before = sim.request_count()
            cpu_before = len(cpu[key])
            _, result, _ = timed(cmd, timeout=330, rss=True, cpu=cpu[key])
            sent = sim.request_count() - before
            sim.reset_log()
            try:
                report = json.loads(result.stdout.strip().splitlines()[-1])
            except (IndexError, ValueError):
                report = None
            if result.returncode != 0 or report is None:
                del cpu[key][cpu_before:]
                failed[key] = f"exit {result.returncode}: {(result.stderr or result.stdout)[-300:].strip()}"
                notes.append(f"throughput {key}: failed ({failed[key]}); left out.")
                log(f"  run {i + 1}: {key:10} FAILED {failed[key]}")
                continue
            expected = N + 2 * C
            if sent != expected:
                notes.append(f"throughput {key} run {i + 1}: the simulator saw {sent} requests, expected {expected}.")
            rps[key].append(report["rps"])
            log(f"  run {i + 1}: {key:10} {report['rps']:9.0f} req/s"
                + (f", {cpu[key][-1] * 1e6 / (N + 2 * C):5.0f} µs CPU per request" if len(cpu[key]) > cpu_before else ""))
    ahc = med(rps["ahc"])
    freshet = med(rps["freshet"])
    rows = []
    result = {"N": N, "C": C}
    for key, name, _ in clients:
        values = rps[key]
        m = med(values)
        result[key] = m
        if not values:
            # Every run of this client failed: the headline and the targets read nan, not a KeyError.
            result[key + "_cpu_us"] = math.nan
            rows.append([name, "failed", "—", "—", "—", "—"])
            continue
        per_request = med(cpu[key]) * 1e6 / (N + 2 * C)
        result[key + "_cpu_us"] = per_request
        rows.append([name, f"{m:,.0f}", f"{min(values):,.0f}–{max(values):,.0f}", fmt_x(m / ahc) if not math.isnan(ahc) else "—",
                     "—" if key == "freshet" else fmt_x(freshet / m),
                     "—" if math.isnan(per_request) else f"{per_request:.0f} µs"])
    lines = [f"### Client throughput — {N:,} GETs of `/_sim/bytes?size=200` at concurrency {C}, keep-alive", "",
             f"Requests per second, median of {args.runs} runs, measured inside each client after {2 * C} untimed warm-up "
             "requests (so connections are open). Every request has a distinct `&n=i` query, so Freshet's coalescing "
             "cannot merge any: each client makes every exchange (the simulator's request count is checked). "
             "Freshet and raw AsyncHTTPClient share one configuration (that of `Transports.sharedHTTPClient`, "
             "connection pool included); every client may open up to 32 connections. The client and the simulator share "
             "the machine's cores, so a client that burns more CPU also slows the server it measures: *client CPU per "
             "request* (user + system time of the whole client process, start-up and warm-up included, ÷ requests; "
             "median) is the steadier number when other work loads the machine.", ""]
    lines += table(["client", "req/s (median)", "range", "vs raw AHC", "Freshet ÷ this", "client CPU per request"],
                   rows, "lrrrrr")
    lines += [""] + instructions(client, url, C, result, notes)
    return result, lines


INSTRUCTION_RUNS = (200, 1200)  # requests per callgrind run; the difference leaves start-up and warm-up out


def find_valgrind() -> str | None:
    """A valgrind that can run the bench client: $FRESHET_VALGRIND, else bench/valgrind-build's."""
    for candidate in (os.environ.get("FRESHET_VALGRIND"), str(ROOT / "bench" / ".out" / "valgrind" / "bin" / "valgrind")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def instructions(client: str, url: str, C: int, result: dict, notes: list[str]) -> list[str]:
    """Instructions per request under callgrind for Freshet and raw AsyncHTTPClient: each client runs
    with 200 and with 1,200 requests, and the difference ÷ 1,000 is what one request costs in user
    space, start-up and warm-up left out. Counted, not timed: the same build gives the same figure
    (within about 2 %, from how the threads interleave) however loaded the machine is."""
    valgrind = find_valgrind()
    result["freshet_instr"] = result["ahc_instr"] = math.nan
    heading = "Instructions per request (callgrind)"
    if valgrind is None:
        notes.append("throughput: instructions per request not measured (no valgrind that runs the client: bench/valgrind-build).")
        return [f"{heading}: not measured — no valgrind that can run the client (build one with `bench/valgrind-build`)."]
    counts: dict[str, dict[int, int]] = {}
    for mode in ("freshet", "ahc"):
        counts[mode] = {}
        for n in INSTRUCTION_RUNS:
            out = OUT / f"callgrind-{mode}-{n}.out"
            try:
                done = run([valgrind, "--tool=callgrind", f"--callgrind-out-file={out}", client, "--mode", mode, "--url", url,
                            "--requests", str(n), "--concurrency", str(C)], timeout=300, check=False)
            except BenchError as error:  # a timeout: the other figures stand
                notes.append(f"throughput: callgrind {mode} {n}: {error}")
                return [f"{heading}: not measured — callgrind did not finish (see the notes)."]
            match = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr or "")
            if done.returncode != 0 or not match:
                notes.append(f"throughput: callgrind {mode} {n} failed (exit {done.returncode}): {(done.stderr or '')[-300:].strip()}")
                return [f"{heading}: not measured — callgrind failed (see the notes)."]
            counts[mode][n] = int(match.group(1).replace(",", ""))
            out.unlink(missing_ok=True)
        log(f"  callgrind {mode}: {counts[mode]}")
    small, large = INSTRUCTION_RUNS
    per = {mode: (c[large] - c[small]) / (large - small) for mode, c in counts.items()}
    result["freshet_instr"], result["ahc_instr"] = per["freshet"], per["ahc"]
    version = run([valgrind, "--version"], timeout=30, check=False).stdout.strip()
    return [f"{heading}, user space only (`{version}`, `--tool=callgrind`): each client ran {small:,} and {large:,} requests "
            f"(concurrency {C}, after the same warm-up); the difference ÷ {large - small:,} is one request's cost with "
            "start-up and warm-up left out. A count, not a time: it does not move with the machine's load (repeated runs of one "
            "build agree within about 2 %, from how the threads interleave).", "",
            *table(["client", f"instructions ({small:,} requests)", f"instructions ({large:,} requests)", "per request"],
                   [["Freshet: APIClient.live, full middleware chain", f"{counts['freshet'][small]:,}",
                     f"{counts['freshet'][large]:,}", f"{per['freshet']:,.0f}"],
                    ["raw AsyncHTTPClient", f"{counts['ahc'][small]:,}", f"{counts['ahc'][large]:,}", f"{per['ahc']:,.0f}"]],
                   "lrrr"), "",
            f"Freshet ÷ raw AsyncHTTPClient: **{fmt_x(per['freshet'] / per['ahc'])}** in instructions per request."]
