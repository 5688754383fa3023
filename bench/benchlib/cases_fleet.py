"""bench/proxy-load's fleet case: cache hits of two `freshet proxy` instances sharing one PostgreSQL
(`--store postgres://…`), each alone and both at once, next to one instance on SQLite, in the same run."""
from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path

from .common import ROOT, fail, fmt_x, log, med, run, table
from .processes import cpu_seconds
from .proxies import raw_get, scripted_body, start_freshet, wrk_run
from .simulator import Simulator

FLEET_PATH = "/scripted/bench-fleet-2k"
PG_PASSWORD = "freshet-test"  # scripts/pg-cluster's throwaway cluster


def case_fleet(args, bins: dict[str, Path], tools: dict[str, str], sim: Simulator, work: Path, out: list[str], summary: dict):
    body = scripted_body(args.body_bytes)
    sim.request("POST", "/_sim/script", {
        "path": FLEET_PATH, "status": 200, "body": body,
        "headers": [["Content-Type", "application/json; charset=utf-8"], ["Cache-Control", "public, max-age=600"],
                    ["ETag", '"bench-fleet-v1"']]})
    # Its own directory under the system's temp dir: the postgres user must reach it, and `work` is 0700.
    cluster = Path(tempfile.mkdtemp(prefix="freshet-fleet-pg."))
    script = ROOT / "scripts" / "pg-cluster"
    url = run(["bash", str(script), "start", str(cluster)], timeout=120).stdout.strip()
    log(f"fleet: PostgreSQL at {url}")
    problems: list[str] = []
    try:
        pg = {"PGPASSWORD": PG_PASSWORD}
        sqlite, sqlite_url, _ = start_freshet(bins["freshet"], sim.url, work, "fleet-sqlite")
        a, a_url, _ = start_freshet(bins["freshet"], sim.url, work, "fleet-a", ("--store", url), pg)
        b, b_url, _ = start_freshet(bins["freshet"], sim.url, work, "fleet-b", ("--store", url), pg)
        before = sim.request_count()
        # Warm: A fetches, B and the SQLite instance must then answer hits (B from the shared store).
        checks = []
        for name, base in (("A", a_url), ("B", b_url), ("sqlite", sqlite_url), ("sqlite", sqlite_url)):
            status, fields, got, _ = raw_get(base + FLEET_PATH)
            checks.append(f"{name} {status} {fields.get('x-cache', '—')}")
            if status != 200 or got != body.encode():
                problems.append(f"{name}: warm-up answered {status}")
        warm_origin = sim.request_count() - before
        if warm_origin != 2:
            problems.append(f"warm-up made {warm_origin} origin requests (expected 2: one for the fleet, one for SQLite)")
        log("fleet: warm-up " + ", ".join(checks) + f"; origin {warm_origin}")

        runs: dict[str, list[float]] = {"sqlite": [], "A": [], "B": [], "A+B": []}
        cores: dict[str, list[float]] = {key: [] for key in runs}
        errors = 0
        origin_during = 0
        for round_ in range(args.rounds):
            for key, child, base in (("sqlite", sqlite, sqlite_url), ("A", a, a_url), ("B", b, b_url)):
                if not child.alive():
                    fail(f"{child.name} exited during the runs: {child.tail()}")
                count, cpu = sim.request_count(), cpu_seconds(child.pid)
                start = time.monotonic()
                result = wrk_run(tools["wrk"], base + FLEET_PATH, args.threads, args.concurrency, args.duration)
                cores[key].append((cpu_seconds(child.pid) - cpu) / (time.monotonic() - start))
                runs[key].append(result["rps"])
                errors += result["non2xx"] + result["socket_errors"]
                origin_during += sim.request_count() - count
            # Both instances at once: two wrk processes, half the connections each.
            results: dict[str, dict] = {}
            cpu = {name: cpu_seconds(child.pid) for name, child in (("A", a), ("B", b))}
            count = sim.request_count()
            start = time.monotonic()
            threads = [threading.Thread(target=lambda n=n, u=u: results.__setitem__(n, wrk_run(
                tools["wrk"], u + FLEET_PATH, args.threads, max(1, args.concurrency // 2), args.duration)))
                for n, u in (("A", a_url), ("B", b_url))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.monotonic() - start
            if set(results) != {"A", "B"}:
                fail("a wrk run of the A+B pair failed")
            runs["A+B"].append(results["A"]["rps"] + results["B"]["rps"])
            cores["A+B"].append(sum(cpu_seconds(child.pid) - cpu[n] for n, child in (("A", a), ("B", b))) / elapsed)
            errors += sum(r["non2xx"] + r["socket_errors"] for r in results.values())
            origin_during += sim.request_count() - count
            log(f"  round {round_ + 1}: " + "  ".join(f"{k} {v[-1]:,.0f}" for k, v in runs.items()))
        if errors:
            problems.append(f"{errors} errors during the runs")
        if origin_during:
            problems.append(f"{origin_during} origin requests during the hit runs")
        base = med(runs["sqlite"])
        rows = [[key if key != "sqlite" else "one instance on SQLite", f"{med(values):,.0f}", f"{min(values):,.0f}–{max(values):,.0f}",
                 fmt_x(med(values) / base), f"{med(cores[key]):.2f}"] for key, values in runs.items()]
        rows[1][0], rows[2][0], rows[3][0] = "instance A on PostgreSQL", "instance B on PostgreSQL", "A and B at once (sum)"
        out += [f"### Fleet — two `freshet proxy` on one PostgreSQL vs one on SQLite, cache hits, `wrk -t{args.threads} "
                f"-c{args.concurrency} -d{args.duration}s`", "",
                f"Origin: freshet-sim's `{FLEET_PATH}` ({len(body):,}-byte JSON, `public, max-age=600`). PostgreSQL: a "
                "throwaway cluster from `scripts/pg-cluster` on loopback. A fetched the resource, B's first answer was "
                "already a hit from the shared store; then per round: the SQLite instance, A, B (each alone), and A and B "
                f"at once (two wrk, {max(1, args.concurrency // 2)} connections each), {args.rounds} round{'s' if args.rounds != 1 else ''}, medians. "
                "Hits come from each instance's memory tier on its event loop, so PostgreSQL is not on the hit path; "
                "on 2 cores the pair shares the cores with each other and with wrk.", "",
                *table(["instance", "hits/s (median)", "min–max", "÷ SQLite", "cores"], rows, "lrrrr"), "",
                "- Warm-up: " + ", ".join(checks) + f"; origin requests {warm_origin} (one for the fleet, one for SQLite).",
                f"- Errors during the runs: {errors}; origin requests during the runs: {origin_during}."]
        if problems:
            out.append("- **Problems:** " + "; ".join(problems) + ".")
        summary["fleet"] = {"runs": runs, "cores": cores, "problems": problems}
        for child in (sqlite, a, b):
            child.stop()
    finally:
        run(["bash", str(script), "stop", str(cluster)], timeout=120, check=False)
    return problems
