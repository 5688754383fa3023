"""bench/proxy-load's cases: peers (cache hits of freshet proxy, nginx and Varnish under wrk) and
load (hits, pass-through, direct and a stream through one freshet proxy, curl --parallel)."""
from __future__ import annotations

import math
import os
import threading
import time
from pathlib import Path

import http.client
import re

from .cases_throughput import INSTRUCTION_RUNS, find_valgrind
from .common import BenchError, fail, fmt_x, log, med, row, run, table
from .machine import fs_type
from .processes import Child, cpu_seconds, cpu_times, rss_kib, tree
from .proxies import raw_get, scripted_body, start_forwarder, start_freshet, start_nginx, start_varnish, wrk_run
from .simulator import Simulator

SCRIPTED_PATH = "/scripted/bench-2k"
HIT_TARGET = 1.0  # issue 35: proxy hits ≥ 1.0× nginx (worker_processes auto), p99 no higher


def case_peers(args, bins: dict[str, Path], tools: dict[str, str], sim: Simulator, work: Path, out: list[str], summary: dict):
    body = scripted_body(args.body_bytes)
    sim.request("POST", "/_sim/script", {
        "path": SCRIPTED_PATH, "status": 200, "body": body,
        "headers": [["Content-Type", "application/json; charset=utf-8"], ["Cache-Control", "public, max-age=600"],
                    ["ETag", '"bench-2k-v1"']]})
    log(f"peers: origin {sim.url}{SCRIPTED_PATH} ({len(body)}-byte JSON, Cache-Control: public, max-age=600)")

    freshet, freshet_url, _ = start_freshet(bins["freshet"], sim.url, work, "peers-proxy")
    nginx, nginx_url = start_nginx(tools["nginx"], sim.port, work, args.nginx_workers)
    varnish, varnish_url = start_varnish(tools["varnishd"], sim.port, work)
    peers = [
        ("freshet", "freshet proxy", freshet, freshet_url),
        ("nginx", f"nginx proxy_cache (worker_processes {args.nginx_workers})", nginx, nginx_url),
        ("varnish", "Varnish (malloc 64 MiB, default thread pools)", varnish, varnish_url),
    ]
    nginx_workers = len([p for p in tree(nginx.pid) if p != nginx.pid])
    log(f"peers: freshet {freshet_url} (pid {freshet.pid}), nginx {nginx_url} (pid {nginx.pid}, {nginx_workers} child "
        f"processes: workers + cache manager/loader), varnish {varnish_url} (pid {varnish.pid})")

    def is_hit(key, fields):
        if key == "freshet":
            return fields.get("x-cache", "").upper() == "HIT", f"X-Cache: {fields.get('x-cache', '—')}"
        if key == "nginx":
            return fields.get("x-cache-status", "").upper() == "HIT", f"X-Cache-Status: {fields.get('x-cache-status', '—')}"
        ids = fields.get("x-varnish", "").split()
        return len(ids) == 2, f"X-Varnish: {fields.get('x-varnish', '—')}, Age: {fields.get('age', '—')}"

    checks, wire = {}, {}
    problems: list[str] = []
    for key, _, _, url in peers:
        target = url + SCRIPTED_PATH
        before = sim.request_count()
        first = raw_get(target)
        second = raw_get(target)
        warm_origin = sim.request_count() - before
        hit, shown = is_hit(key, second[1])
        if first[0] != 200 or second[0] != 200 or second[2] != body.encode():
            problems.append(f"{key}: warm-up answered {first[0]}/{second[0]}, body {'matches' if second[2] == body.encode() else 'DIFFERS'}")
        if not hit:
            problems.append(f"{key}: the second answer was not a cache hit ({shown})")
        checks[key] = {"hit": hit, "shown": shown, "origin": warm_origin}
        wire[key] = second[3]
        log(f"  warm {key}: {first[0]} then {second[0]} ({shown}); origin saw {warm_origin} request(s); "
            f"{second[3]} bytes on the wire per answer")

    samples = {key: [] for key, *_ in peers}
    cpu = {key: [] for key, *_ in peers}
    origin = {key: 0 for key, *_ in peers}
    for round_ in range(args.rounds):
        for key, _, child, url in rotated(peers, round_):
            if not child.alive():
                fail(f"{child.name} exited ({child.process.returncode}) during the runs: {child.tail()}")
            before, cpu_before = sim.request_count(), cpu_seconds(child.pid)
            start = time.monotonic()
            result = wrk_run(tools["wrk"], url + SCRIPTED_PATH, args.threads, args.concurrency, args.duration)
            elapsed = time.monotonic() - start
            result["cores"] = (cpu_seconds(child.pid) - cpu_before) / elapsed
            result["origin"] = sim.request_count() - before
            origin[key] += result["origin"]
            samples[key].append(result)
            cpu[key].append(result["cores"])
            log(f"  round {round_ + 1}: {key:8} {result['rps']:9.0f} req/s  p50 {result['p50']:6.2f} ms  p99 "
                f"{result['p99']:6.2f} ms  {result['cores']:.2f} cores  errors {result['non2xx'] + result['socket_errors']}  "
                f"origin {result['origin']}")
    after = {}
    for key, _, _, url in peers:
        hit, shown = is_hit(key, raw_get(url + SCRIPTED_PATH)[1])
        after[key] = shown
        if not hit:
            problems.append(f"{key}: after the runs the answer was no longer a hit ({shown})")

    stats = {}
    for key, name, child, _ in peers:
        values = [s["rps"] for s in samples[key]]
        stats[key] = {"name": name, "rps": med(values), "min": min(values), "max": max(values),
                      "p50": med([s["p50"] for s in samples[key]]), "p99": med([s["p99"] for s in samples[key]]),
                      "cores": med(cpu[key]), "rss_kib": rss_kib(child.pid, whole_tree=True),
                      "errors": sum(s["non2xx"] + s["socket_errors"] for s in samples[key]),
                      "requests": sum(s["requests"] for s in samples[key]), "origin": origin[key],
                      "wire": wire[key], "runs": values}
    f = stats["freshet"]["rps"]
    ratio_nginx, ratio_varnish = f / stats["nginx"]["rps"], f / stats["varnish"]["rps"]

    out += [f"### Cache hits — freshet proxy vs nginx `proxy_cache` vs Varnish, `wrk -t{args.threads} -c{args.concurrency} "
            f"-d{args.duration}s --latency`", "",
            f"Origin: freshet-sim's scripted route `{SCRIPTED_PATH}` (a {len(body):,}-byte JSON body, `Cache-Control: public, "
            "max-age=600`, an ETag), one instance behind all three. Each peer was warmed with one request and its second "
            "answer checked to be a hit; then the runs alternated freshet, nginx, varnish for "
            f"{args.rounds} round{'s' if args.rounds != 1 else ''}, each round starting one peer further on (a run "
            "early in a round went measurably faster on this machine). The medians are over the rounds; *cores* is the CPU "
            "time the peer's processes used during a run ÷ its wall time (median); RSS is the peer's whole process "
            "tree after the runs; *bytes/answer* is one hit on the wire, head included. wrk (one thread) and the "
            "peer share the machine's cores; the origin is idle while hits are served.", ""]
    rows = []
    for key in ("freshet", "nginx", "varnish"):
        s = stats[key]
        rows.append([s["name"], f"{s['rps']:,.0f}", f"{s['min']:,.0f}–{s['max']:,.0f}", f"{s['p50']:.2f} ms",
                     f"{s['p99']:.2f} ms", "—" if key == "freshet" else fmt_x(f / s["rps"]), f"{s['cores']:.2f}",
                     f"{s['rss_kib'] / 1024:.1f} MiB", f"{s['wire']:,}", str(s["errors"]), str(s["origin"])])
    out += table(["peer", "req/s (median)", "min–max", "p50 (median)", "p99 (median)", "freshet ÷ this", "cores", "RSS",
                  "bytes/answer", "errors", "origin requests"], rows, "lrrrrrrrrrr") + [""]
    out += ["Round by round (req/s):", ""]
    out += table(["round", "freshet", "nginx", "varnish"],
                 [[str(i + 1)] + [f"{stats[k]['runs'][i]:,.0f}" for k in ("freshet", "nginx", "varnish")]
                  for i in range(args.rounds)], "rrrr")
    out += ["",
            f"- freshet ÷ nginx = **{ratio_nginx:.2f}×**, freshet ÷ varnish = **{ratio_varnish:.2f}×** (medians).",
            f"- Target (issue 35): proxy hits ≥ {HIT_TARGET}× nginx, p99 no higher: "
            f"**{'met' if ratio_nginx >= HIT_TARGET and stats['freshet']['p99'] <= stats['nginx']['p99'] else 'NOT met'}** "
            f"({ratio_nginx:.2f}×; p99 {stats['freshet']['p99']:.2f} against {stats['nginx']['p99']:.2f} ms).",
            "- Hit checks: warm-up " + "; ".join(f"{k} {'hit' if c['hit'] else 'NOT a hit'} ({c['shown']})" for k, c in checks.items())
            + "; after the runs " + "; ".join(f"{k} {v}" for k, v in after.items()) + ".",
            "- Origin requests during the hit runs (freshet-sim's `/_sim/stats`): "
            + ", ".join(f"{k} {stats[k]['origin']}" for k in stats) + f" (of {sum(s['requests'] for s in stats.values()):,} "
            "answers in all).",
            f"- Set-up: freshet proxy with its defaults (NIO, one event loop per core; {os.cpu_count()} cores); nginx "
            f"`worker_processes {args.nginx_workers}` ({nginx_workers} child processes: workers plus cache manager and "
            "loader), cache files in a temp dir on "
            f"{fs_type(work)}, keep-alive upstream, `keepalive_requests` unbounded for the run, access log off; Varnish "
            "built-in VCL, `-s malloc,64m`, default thread pools, `-j none -T none`."]
    if problems:
        out += ["- **Problems:** " + "; ".join(problems) + "."]
    summary["peers"] = {k: {kk: vv for kk, vv in v.items() if kk != "name"} for k, v in stats.items()}
    summary["ratio_nginx"], summary["ratio_varnish"] = ratio_nginx, ratio_varnish
    summary["target"] = {"ratio": HIT_TARGET,
                         "met": ratio_nginx >= HIT_TARGET and stats["freshet"]["p99"] <= stats["nginx"]["p99"]}
    summary["problems"] = problems
    for child in (freshet, nginx, varnish):
        child.stop()
    out += [""] + hit_instructions(bins["freshet"], tools["nginx"], sim, work, summary)
    return problems


def hit_instructions(freshet: Path, nginx: str, sim: Simulator, work: Path, summary: dict) -> list[str]:
    """Instructions per cache hit under callgrind, freshet proxy against nginx `proxy_cache` (one
    process, `master_process off`): each serves 200 and then 1,200 hits to one keep-alive client in
    turn (after one miss that stores the answer); the difference ÷ 1,000 is one hit's cost in user
    space. A count, not a time: the ratio does not move with the machine's load, which the req/s
    ratio above does."""
    heading = "Instructions per hit (callgrind)"
    summary["hit_instructions"] = {"freshet": math.nan, "nginx": math.nan}
    valgrind = find_valgrind()
    if valgrind is None:
        return [f"{heading}: not measured — no valgrind here (build one with `bench/valgrind-build`)."]
    small, large = INSTRUCTION_RUNS

    def start(key: str, n: int, wrapper: tuple[str, ...]) -> tuple[Child, str]:
        if key == "freshet":
            child, url, _ = start_freshet(freshet, sim.url, work, f"cg-{n}", wrapper=wrapper)
            return child, url
        return start_nginx(nginx, sim.port, work, "1", wrapper=wrapper, name=f"nginx-cg-{n}")
    try:
        counts = instruction_counts(valgrind, work, "hits", ["freshet", "nginx"], start,
                                    lambda key, n, url: drive_hits(url, n, "x-cache" if key == "freshet" else "x-cache-status"),
                                    "were not hits")
    except BenchError as error:
        return [f"{heading}: not measured — {error}"]
    per = {key: (c[large] - c[small]) / (large - small) for key, c in counts.items()}
    summary["hit_instructions"] = per
    return [f"{heading}: one keep-alive client, one request at a time, {small:,} and then {large:,} hits; the "
            f"difference ÷ {large - small:,} is one hit in user space (freshet's event loops and nginx's one process).", "",
            *table(["peer", f"instructions ({small:,} hits)", f"instructions ({large:,} hits)", "per hit", "freshet ÷ this"],
                   [["freshet proxy", f"{counts['freshet'][small]:,}", f"{counts['freshet'][large]:,}",
                     f"{per['freshet'] / 1000:,.1f}k", "—"],
                    ["nginx proxy_cache (one process)", f"{counts['nginx'][small]:,}", f"{counts['nginx'][large]:,}",
                     f"{per['nginx'] / 1000:,.1f}k", fmt_x(per["freshet"] / per["nginx"])]], "lrrrr")]


def instruction_counts(valgrind: str, work: Path, tag: str, keys: list[str], start, drive,
                       wrong_answers: str) -> dict[str, dict[int, int]]:
    """For each of `keys`, the instructions of the server `start(key, n, wrapper)` starts under
    callgrind while `drive(key, n, url)` sends it `n` requests, for both of INSTRUCTION_RUNS;
    `drive` returns how many answers were wrong, which fails the count (`wrong_answers` says what
    they were). Raises BenchError naming the key. With BENCH_KEEP_CALLGRIND set to a folder,
    the callgrind files are moved there (their paths are logged) for `callgrind_annotate`."""
    counts: dict[str, dict[int, int]] = {key: {} for key in keys}
    for key in keys:
        for n in INSTRUCTION_RUNS:
            out = work / f"callgrind-{tag}-{key}-{n}.out"
            try:
                child, url = start(key, n, (valgrind, "--tool=callgrind", f"--callgrind-out-file={out}"))
                wrong = drive(key, n, url)
                child.stop(timeout=120)
            except BenchError as error:
                raise BenchError(f"{key} under callgrind: {error}") from error
            match = re.search(r"^summary:\s+(\d+)", out.read_text() if out.exists() else "", re.M)
            if wrong or not match:
                raise BenchError(f"{key} under callgrind: "
                                 + (f"{wrong} of {n} answers {wrong_answers}" if wrong else "no callgrind output"))
            counts[key][n] = int(match.group(1))
            keep = os.environ.get("BENCH_KEEP_CALLGRIND")  # a folder: to read where the instructions go
            if keep:
                Path(keep).mkdir(parents=True, exist_ok=True)
                log(f"  kept {out.replace(Path(keep) / out.name)}")
            else:
                out.unlink()
        log(f"  callgrind {tag} {key}: {counts[key]}")
    return counts


def drive_hits(url: str, n: int, cache_field: str) -> int:
    """One miss, then `n` GETs of the scripted route on one keep-alive connection; returns how many
    of the `n` were not hits."""
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=120)
    misses = 0
    try:
        for i in range(n + 1):
            connection.request("GET", SCRIPTED_PATH)
            response = connection.getresponse()
            response.read()
            if i > 0 and (response.getheader(cache_field) or "").upper() != "HIT":
                misses += 1
    except OSError as error:
        raise BenchError(f"the client failed: {error}") from error
    finally:
        connection.close()
    return misses


PASS_PATH = "/scripted/bench-pass-2k"
PASS_TARGET = 1.0  # issue 35: forwarding at least as fast as nginx proxy_pass
REVALIDATE_KEYS = 256  # distinct URLs the callgrind revalidation run cycles through (one request at a time)
# Distinct URLs the wrk revalidation runs cycle through: a URL comes round again after this many
# requests, so a request still in flight then (64 at once: ~16x the median latency) is all but
# impossible. One that is waits for the other's revalidation, as concurrent requests for one key
# do, and makes no request of its own (256 URLs let ~0.4 % of the answers do so once revalidations
# took ~3.5 ms at the median and ~15 ms at p99).
WRK_REVALIDATE_KEYS = 1024


def rotated(runs: list, round_: int) -> list:
    """`runs` in the order of round `round_`: each round starts one further on."""
    start = round_ % len(runs)
    return runs[start:] + runs[:start]


def case_pass(args, bins: dict[str, Path], tools: dict[str, str], sim: Simulator, work: Path, out: list[str], summary: dict):
    """Forwarding: freshet proxy's misses (a no-store answer) and `--revalidate always` revalidations
    (a 304 each time) against nginx `proxy_pass` (no cache, keep-alive upstream) and the origin
    itself, all with wrk, alternated round by round. The revalidations cycle through
    WRK_REVALIDATE_KEYS URLs (a wrk script), so that no two requests in flight share a key: requests
    for one key would wait for one revalidation (coalescing) and not reach the origin."""
    body = scripted_body(args.body_bytes)
    fields = [["Content-Type", "application/json; charset=utf-8"], ["ETag", '"bench-pass-v1"']]
    sim.request("POST", "/_sim/script", {"path": PASS_PATH, "status": 200, "body": body,
                                         "headers": fields + [["Cache-Control", "no-store"]]})
    sim.request("POST", "/_sim/script", {"path": SCRIPTED_PATH, "status": 200, "body": body,
                                         "headers": fields + [["Cache-Control", "public, max-age=600"]]})
    miss, miss_url, _ = start_freshet(bins["freshet"], sim.url, work, "pass-miss")
    reval, reval_url, _ = start_freshet(bins["freshet"], sim.url, work, "pass-revalidate", ("--revalidate", "always"))
    nginx, nginx_url = start_nginx(tools["nginx"], sim.port, work, args.nginx_workers, cache=False)
    forwarder, forwarder_url = start_forwarder(bins["freshet-bench-forwarder"], sim.port, work)
    runs = [
        ("direct", "the origin itself (freshet-sim), no proxy", None, sim.url + PASS_PATH),
        ("nginx", f"nginx `proxy_pass` (no cache, worker_processes {args.nginx_workers})", nginx, nginx_url + PASS_PATH),
        ("nio", "bench/forwarder: the plainest forwarder on SwiftNIO (no cache, no task)", forwarder,
         forwarder_url + PASS_PATH),
        ("miss", "freshet proxy, miss (`no-store` answer, forwarded)", miss, miss_url + PASS_PATH),
        ("revalidate", "freshet proxy `--revalidate always`, hit revalidated (`304`)", reval, reval_url + SCRIPTED_PATH),
    ]
    script = work / "revalidate.lua"
    script.write_text(f"""-- written by bench/proxy-load: cycle through {WRK_REVALIDATE_KEYS} stored URLs
counter = 0
request = function()
  counter = counter + 1
  return wrk.format("GET", "{SCRIPTED_PATH}?k=" .. (counter % {WRK_REVALIDATE_KEYS}))
end
""")
    problems: list[str] = []
    for key, _, _, url in runs:  # warm: connections open; the revalidating proxy stores every key
        for k in range(WRK_REVALIDATE_KEYS if key == "revalidate" else 2):
            status, _, got, _ = raw_get(url + (f"?k={k}" if key == "revalidate" else ""))
            if status != 200 or got != body.encode():
                problems.append(f"{key}: warm-up answered {status}, body {'matches' if got == body.encode() else 'DIFFERS'}")
                break
    samples = {key: [] for key, *_ in runs}
    # Each run takes each place in a round once: on this machine a run early in a round went
    # measurably faster than the same run late in one.
    rounds = max(args.rounds, len(runs))
    for round_ in range(rounds):
        for key, _, child, url in rotated(runs, round_):
            if child is not None and not child.alive():
                fail(f"{child.name} exited ({child.process.returncode}) during the runs: {child.tail()}")
            before = sim.request_count()
            cpu_before, origin_before = cpu_times(child.pid) if child else (0.0, 0.0), cpu_seconds(sim.pid)
            start = time.monotonic()
            result = wrk_run(tools["wrk"], url, args.threads, args.concurrency, args.duration,
                             script=script if key == "revalidate" else None)
            elapsed = time.monotonic() - start
            cpu_after, origin_after = cpu_times(child.pid) if child else (0.0, 0.0), cpu_seconds(sim.pid)
            result["cores"] = (sum(cpu_after) - sum(cpu_before)) / elapsed if child else float("nan")
            # CPU time per answer, in µs: the peer's user and system time, and the origin's.
            answers = max(1, result["requests"])
            result["user_us"], result["system_us"] = ((a - b) * 1e6 / answers if child else float("nan")
                                                      for a, b in zip(cpu_after, cpu_before))
            result["origin_us"] = (origin_after - origin_before) * 1e6 / answers
            result["origin"] = sim.request_count() - before
            samples[key].append(result)
            log(f"  pass round {round_ + 1}: {key:10} {result['rps']:9.0f} req/s  p50 {result['p50']:6.2f} ms  p99 "
                f"{result['p99']:6.2f} ms  origin {result['origin']}")
    stats = {}
    for key, name, _, _ in runs:
        values = [s["rps"] for s in samples[key]]
        stats[key] = {"name": name, "rps": med(values), "min": min(values), "max": max(values),
                      "p50": med([s["p50"] for s in samples[key]]), "p99": med([s["p99"] for s in samples[key]]),
                      "cores": med([s["cores"] for s in samples[key]]),
                      **{us: med([s[us] for s in samples[key]]) for us in ("user_us", "system_us", "origin_us")},
                      "errors": sum(s["non2xx"] + s["socket_errors"] for s in samples[key]),
                      "requests": sum(s["requests"] for s in samples[key]),
                      "origin": sum(s["origin"] for s in samples[key])}
        # Every answer reaches the origin: forwarded, or revalidated (no two in flight share a key).
        if key != "direct" and stats[key]["origin"] < stats[key]["requests"]:
            problems.append(f"{key}: the origin saw {stats[key]['origin']:,} requests of {stats[key]['requests']:,}")
    nginx_rps = stats["nginx"]["rps"]
    rows = [[s["name"], f"{s['rps']:,.0f}", f"{s['min']:,.0f}–{s['max']:,.0f}", f"{s['p50']:.2f} ms", f"{s['p99']:.2f} ms",
             fmt_x(s["rps"] / stats["direct"]["rps"]), fmt_x(s["rps"] / nginx_rps),
             "—" if math.isnan(s["cores"]) else f"{s['cores']:.2f}",
             "—" if math.isnan(s["user_us"]) else f"{s['user_us']:.1f} + {s['system_us']:.1f} = {cpu_per_answer(s):.1f}",
             f"{s['origin_us']:.1f}", str(s["errors"]), f"{s['origin']:,}"]
            for s in stats.values()]
    ratio_miss, ratio_reval = stats["miss"]["rps"] / nginx_rps, stats["revalidate"]["rps"] / nginx_rps
    out += [f"### Pass-through — freshet proxy misses and revalidations vs nginx `proxy_pass`, `wrk -t{args.threads} "
            f"-c{args.concurrency} -d{args.duration}s --latency`", "",
            f"Every request reaches the origin (freshet-sim, {len(body):,}-byte JSON bodies): *miss* forwards a `no-store` "
            f"answer (`{PASS_PATH}`); *revalidate* is `freshet proxy --revalidate always` on the cacheable `{SCRIPTED_PATH}` "
            f"(its ETag) under {WRK_REVALIDATE_KEYS:,} URLs (`?k=0…{WRK_REVALIDATE_KEYS - 1}`, stored first, cycled through by a wrk "
            "script so that no two requests in flight share one: requests for one URL would wait for one revalidation): "
            "each request becomes a conditional request, the origin answers `304` and the stored body is sent; nginx is "
            "plain `proxy_pass` with a keep-alive upstream and no cache, on the no-store route; *bench/forwarder* "
            "(`freshet-bench-forwarder`) forwards the same route part by part on NIO's event loops over keep-alive "
            "connections, with nothing of a cache: what forwarding costs on Swift and NIO alone. Runs "
            f"alternated direct, nginx, forwarder, miss, revalidate for {rounds} rounds, each round starting one run further on "
            "(each run takes each place once: a run early in a round went measurably faster on this machine); medians. "
            "The origin, the proxy and wrk "
            "share the machine's cores, so the origin's own cost is in every row. *CPU per answer* is the peer's "
            "user + system CPU time during a run ÷ the answers wrk counted, in µs (median), and *origin's CPU* the "
            "same for freshet-sim: what each answer cost the machine, which sets how many the cores can make.", "",
            *table(["run", "req/s (median)", "min–max", "p50", "p99", "÷ direct", "÷ nginx", "cores",
                    "CPU per answer (user + system, µs)", "origin's CPU per answer (µs)", "errors", "origin requests"],
                   rows, "lrrrrrrrrrrr"), "",
            f"- freshet ÷ nginx `proxy_pass`: misses **{ratio_miss:.2f}×**, revalidations **{ratio_reval:.2f}×** "
            f"(target ≥ {PASS_TARGET}×: {'met' if min(ratio_miss, ratio_reval) >= PASS_TARGET else 'NOT met'}); "
            f"the SwiftNIO forwarder {stats['nio']['rps'] / nginx_rps:.2f}×.",
            "- CPU per answer ÷ nginx's: " + ", ".join(
                f"{label} {cpu_per_answer(stats[key]) / cpu_per_answer(stats['nginx']):.2f}×"
                for key, label in (("miss", "misses"), ("revalidate", "revalidations"), ("nio", "the SwiftNIO forwarder")))
            + f"; the user-space part alone: nginx {stats['nginx']['user_us']:.1f} µs, misses {stats['miss']['user_us']:.1f}, "
              f"revalidations {stats['revalidate']['user_us']:.1f}, the forwarder {stats['nio']['user_us']:.1f}."]
    if problems:
        out.append("- **Problems:** " + "; ".join(problems) + ".")
    summary["pass"] = {"stats": stats, "ratio_miss": ratio_miss, "ratio_revalidate": ratio_reval, "target": PASS_TARGET,
                       "ratio_forwarder": stats["nio"]["rps"] / nginx_rps, "problems": problems}
    for child in (miss, reval, nginx, forwarder):
        child.stop()
    out += [""] + pass_instructions(bins, tools["nginx"], sim, work, summary)
    return problems


def cpu_per_answer(stats: dict) -> float:
    """A pass-through run's CPU µs per answer: the medians of its user and its system time per answer, added."""
    return stats["user_us"] + stats["system_us"]


def pass_instructions(bins: dict[str, Path], nginx: str, sim: Simulator, work: Path, summary: dict) -> list[str]:
    """Instructions per forwarded request under callgrind, as `hit_instructions` counts hits: each
    peer serves 200 and then 1,200 requests to one keep-alive client (the revalidating proxy first
    stores REVALIDATE_KEYS answers, in both runs alike, then cycles through them); the difference ÷
    1,000 is one request in user space. freshet's every thread is counted, the store's writer too."""
    heading = "Instructions per forwarded request (callgrind)"
    summary["pass_instructions"] = {}
    valgrind = find_valgrind()
    if valgrind is None:
        return [f"{heading}: not measured — no valgrind here (build one with `bench/valgrind-build`)."]
    small, large = INSTRUCTION_RUNS
    peers = [("miss", "freshet proxy, miss (`no-store`, forwarded)"),
             ("revalidate", "freshet proxy `--revalidate always` (`304`)"),
             ("nio", "bench/forwarder (SwiftNIO)"), ("nginx", "nginx `proxy_pass` (one process)")]

    def start(key: str, n: int, wrapper: tuple[str, ...]) -> tuple[Child, str]:
        if key in ("miss", "revalidate"):
            extra = ("--revalidate", "always") if key == "revalidate" else ()
            child, url, _ = start_freshet(bins["freshet"], sim.url, work, f"cg-pass-{key}-{n}", extra, wrapper=wrapper)
            return child, url
        if key == "nio":
            return start_forwarder(bins["freshet-bench-forwarder"], sim.port, work, wrapper=wrapper, name=f"forwarder-cg-{n}")
        return start_nginx(nginx, sim.port, work, "1", cache=False, wrapper=wrapper, name=f"nginx-pass-cg-{n}")
    try:
        counts = instruction_counts(valgrind, work, "pass", [key for key, _ in peers], start,
                                    lambda key, n, url: drive_pass(url, n, key), "were not as expected")
    except BenchError as error:
        return [f"{heading}: not measured — {error}"]
    per = {key: (c[large] - c[small]) / (large - small) for key, c in counts.items()}
    summary["pass_instructions"] = per
    return [f"{heading}: one keep-alive client, one request at a time, {small:,} and then {large:,} requests; the "
            f"difference ÷ {large - small:,} is one request in user space (every thread of each process).", "",
            *table(["peer", f"instructions ({small:,})", f"instructions ({large:,})", "per request", "÷ nginx"],
                   [[label, f"{counts[key][small]:,}", f"{counts[key][large]:,}", f"{per[key] / 1000:,.1f}k",
                     fmt_x(per[key] / per["nginx"])] for key, label in peers], "lrrrr")]


def drive_pass(url: str, n: int, key: str) -> int:
    """`n` GETs on one keep-alive connection: the no-store route, or for *revalidate* the stored
    URLs in turn after storing them and revalidating each once (so that both runs end with every
    key freshened in memory alone: the store's flush at exit writes all of them in each run, and
    the difference between the runs leaves that out); returns how many answers were not a `200`
    (from freshet: not `X-Cache: MISS`, or `REVALIDATED`)."""
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=120)
    expected = {"miss": "MISS", "revalidate": "REVALIDATED"}.get(key)
    wrong = 0
    try:
        if key == "revalidate":
            for k in range(2 * REVALIDATE_KEYS):
                connection.request("GET", f"{SCRIPTED_PATH}?k={k % REVALIDATE_KEYS}")
                response = connection.getresponse()
                response.read()
                if response.status != 200:
                    raise BenchError(f"storing {SCRIPTED_PATH}?k={k % REVALIDATE_KEYS} answered {response.status}")
        for i in range(n):
            connection.request("GET", f"{SCRIPTED_PATH}?k={i % REVALIDATE_KEYS}" if key == "revalidate" else PASS_PATH)
            response = connection.getresponse()
            response.read()
            if response.status != 200 or (expected and (response.getheader("x-cache") or "").upper() != expected):
                wrong += 1
    except OSError as error:
        raise BenchError(f"the client failed: {error}") from error
    finally:
        connection.close()
    return wrong


def case_load(args, bins, tools, sim: Simulator, work: Path, out: list[str], summary: dict):
    proxy, proxy_url, home = start_freshet(bins["freshet"], sim.url, work, "load-proxy")
    samples: list[tuple[float, int]] = []
    sampling = threading.Event()

    def sampler():
        while not sampling.is_set() and proxy.alive():
            samples.append((time.time(), rss_kib(proxy.pid)))
            sampling.wait(0.2)
    thread = threading.Thread(target=sampler, daemon=True)
    thread.start()

    curl = tools["curl"]
    rows = []
    problems = []

    def load(name: str, url: str, watch_pid: int):
        config = work / f"{name}.curl"
        config.write_text(f'url = "{url}"\noutput = "/dev/null"\n' * args.requests)
        before_rss, before_origin = rss_kib(watch_pid), sim.request_count()
        start = time.monotonic()
        result = run([curl, "--silent", "--show-error", "--parallel", "--parallel-immediate", "--parallel-max",
                      str(args.concurrency), "--max-time", "30", "--noproxy", "*", "--write-out",
                      "%{http_code} %{time_total}\n", "--config", str(config)], timeout=300, check=False)
        seconds = time.monotonic() - start
        lines = [line.split() for line in result.stdout.splitlines() if line.strip()]
        times = sorted(float(t) * 1000 for _, t in lines)
        ok = sum(1 for code, _ in lines if code == "200")
        origin = sim.request_count() - before_origin

        def rank(p):
            return times[max(0, math.ceil(len(times) * p) - 1)] if times else float("nan")
        rows.append(row([name, str(args.requests), str(args.concurrency), str(args.requests - ok), f"{seconds:.2f}",
                         f"{args.requests / seconds:,.0f}", f"{rank(0.5):.1f}", f"{rank(0.99):.1f}", str(origin),
                         f"{before_rss / 1024:.1f}", f"{rss_kib(watch_pid) / 1024:.1f}"]))
        if len(lines) != args.requests:
            problems.append(f"{name}: {len(lines)} of {args.requests} transfers reported")
        log(f"  load {name}: {args.requests / seconds:,.0f} req/s, {args.requests - ok} errors, origin {origin}")

    log(f"load: freshet proxy {proxy_url} (pid {proxy.pid}) in front of {sim.url}")
    raw_get(proxy_url + "/repos/ReactiveX/RxSwift")  # warm: store the entry
    load("hit", proxy_url + "/repos/ReactiveX/RxSwift", proxy.pid)
    load("pass", proxy_url + "/_sim/bytes?size=5000", proxy.pid)
    load("hit", proxy_url + "/repos/ReactiveX/RxSwift", proxy.pid)
    load("direct", sim.url + "/_sim/bytes?size=5000", proxy.pid)

    stream_bytes = 500_000_000
    result = run([curl, "--silent", "--show-error", "--noproxy", "*", "--max-time", "120", "-o", "/dev/null",
                  "--write-out", "%{http_code} %{size_download} %{time_total}",
                  f"{proxy_url}/_sim/bytes?size={stream_bytes}&chunked=1"], timeout=180, check=False)
    try:
        code, size, seconds = result.stdout.split()
        stream = (f"stream: status {code}, {int(size):,} bytes in {float(seconds):.2f} s "
                  f"({int(size) / float(seconds) / 1e6:.0f} MB/s), proxy RSS after {rss_kib(proxy.pid) / 1024:.1f} MiB")
    except ValueError:
        stream = f"stream: curl failed (exit {result.returncode}): {result.stderr.strip()[-300:]}"
        problems.append("stream failed")
    sampling.set()
    thread.join(timeout=5)
    peak = max((kib for _, kib in samples), default=0)
    stats = run([bins["freshet"], "cache", "stats"], timeout=60, check=False,
                env=dict(os.environ, FRESHET_HOME=str(home), NO_COLOR="1"))
    answers = next((line.split(None, 1)[1].strip() for line in stats.stdout.splitlines() if line.startswith("answers")), None)
    status = proxy.stop(timeout=30)

    out += ["### Load — `freshet proxy` alone: hits, pass-through, direct baseline, one large stream (curl --parallel)", "",
            f"Origin: freshet-sim. *hit*: `/repos/ReactiveX/RxSwift` (5 KB, max-age=60) from the proxy's cache; *pass*: "
            f"`/_sim/bytes?size=5000` (no-store) forwarded every time; *direct*: the pass workload against the simulator "
            f"itself. {args.requests} requests per run over {args.concurrency} connections; latency is curl's per-transfer "
            "time_total (nearest rank); *origin* is the requests the simulator saw during the run; RSS is the proxy's.", "",
            *table(["run", "requests", "conc", "errors", "seconds", "requests/s", "p50 ms", "p99 ms", "origin",
                    "RSS before MiB", "RSS after MiB"], rows, "lrrrrrrrrrr"), "",
            f"- {stream}",
            f"- proxy peak RSS over all runs: {peak / 1024:.1f} MiB ({len(samples)} samples, every 0.2 s)"]
    if answers:
        out.append(f"- cache answers (`freshet cache stats`): {answers}")
    out.append(f"- proxy exit status after SIGTERM: {status}")
    if problems:
        out.append("- **Problems:** " + "; ".join(problems) + ".")
    summary["load"] = {"rows": rows, "peak_rss_mib": peak / 1024, "exit_status": status}
    return problems


# MARK: - Main
