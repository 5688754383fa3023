"""bench/proxy-load's team case (issue #30, point 10): a team's CI traffic to GitHub — 4 tokens × 25 CI
jobs, each job the GitHub calls such a job makes, with clients that ask for gzip — straight at the
simulator and through two `freshet proxy` on one PostgreSQL, in four modes: rate-limit units spent
per token, origin requests, bytes, per-request latency, and answers served to the wrong token."""
from __future__ import annotations

import gzip
import hashlib
import http.client
import io
import json
import math
import re
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from pathlib import Path

from .common import ROOT, fail, fmt_x, log, run, table
from .proxies import start_freshet
from .simulator import Simulator

REPO = "vapor/vapor"                  # 300 events: pages of 30, so pages 1–3 all have rel="next"
USERS = ["octocat", "kean", "onevcat", "groue", "kzaher"]
TOKENS, JOBS_PER_TOKEN = 4, 25
PER_PAGE = 30
PG_PASSWORD = "freshet-test"          # scripts/pg-cluster's throwaway cluster
REQUEST_TIMEOUT = 30                  # seconds, per request
MODE_BUDGET = 300                     # seconds, per mode
TEAM_HEADING = "### Team traffic"

# (name, proxy flags or None for the jobs straight at the simulator, what the row is called)
MODES = [
    ("direct", None, "direct (jobs straight at the simulator)"),
    ("proxy", (), "two proxies, default flags (shared cache)"),
    ("partition", ("--partition", "credential"), "`--partition credential`"),
    ("revalidate", ("--partition", "credential", "--revalidate", "always"), "`--partition credential --revalidate always`"),
]


# MARK: - The simulator's ETag and permissions, recomputed


MASK = (1 << 64) - 1


def _fnv1a64(data: bytes, basis: int = 0xcbf29ce484222325) -> int:
    h = basis
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & MASK
    return h


def sim_etag(body: bytes, token: str) -> str:
    """The ETag freshet-sim gives `body` answered to `token`: W/"hex128(body NUL token)" (Hashing.hex128)."""
    data = body + b"\0" + token.encode()
    a, b = _fnv1a64(data), _fnv1a64(data, 0x6c62272e07bb0142)
    state = ((a ^ (b << 1)) + 0x9E3779B97F4A7C15) & MASK   # SplitMix64(seed:).next()
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    c = (z ^ (z >> 31)) ^ b
    return f'W/"{a:016x}{c:016x}"'


def role(token: str) -> tuple[bool, bool, bool, bool]:
    """(admin, maintain, push, triage) as freshet-sim derives them from the token's SHA-256."""
    d = hashlib.sha256(token.encode()).digest()
    admin, r = d[0] & 1 == 1, d[1] % 4
    return admin, admin or r >= 3, admin or r >= 2, admin or r >= 1


def team_tokens() -> list[str]:
    """Four fake tokens, each with different permissions on the repository, so an answer served to
    the wrong token shows in `permissions` as well as in the ETag."""
    tokens, roles = [], set()
    for i in range(1000):
        token = f"ghp_freshetbenchteam{i:04d}fake"
        if role(token) not in roles:
            roles.add(role(token))
            tokens.append(token)
        if len(tokens) == TOKENS:
            return tokens
    fail("could not pick four tokens with different permissions")


def label(token: str) -> str:
    """How the simulator names a token: the first 12 hex digits of its SHA-256."""
    return hashlib.sha256(token.encode()).hexdigest()[:12]


# MARK: - A client that counts the bytes it receives


class _CountingRaw(io.RawIOBase):
    def __init__(self, raw, counter: list[int]):
        self.raw, self.counter = raw, counter

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self.raw.readinto(buffer)
        self.counter[0] += n or 0
        return n

    def close(self) -> None:
        self.raw.close()
        super().close()


class _CountingSocket:
    def __init__(self, sock, counter: list[int]):
        self._sock, self._counter = sock, counter

    def makefile(self, mode="r", buffering=None, **_):
        assert "b" in mode and "w" not in mode, mode  # http.client reads its responses with makefile("rb")
        return io.BufferedReader(_CountingRaw(self._sock.makefile("rb", buffering=0), self._counter))

    def __getattr__(self, name):
        return getattr(self._sock, name)


class CountingConnection(http.client.HTTPConnection):
    """http.client's connection, counting every byte of every response (status line, head, body as sent)."""

    def __init__(self, host: str, port: int, counter: list[int]):
        super().__init__(host, port, timeout=REQUEST_TIMEOUT)
        self.counter = counter

    def connect(self) -> None:
        super().connect()
        self.sock = _CountingSocket(self.sock, self.counter)


# MARK: - One CI job


class Tally:
    """What the jobs of one mode saw (threads add to it under its lock)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.latencies: list[float] = []
        self.wire = 0
        self.answers = 0
        self.errors: list[str] = []
        self.left_proxy = 0
        self.not_gzip = 0
        self.wrong_permissions = 0
        self.cache: dict[str, int] = {}
        self.etags: list[tuple[str, int, str]] = []  # (body's sha256, token index, ETag received)
        self.bodies: dict[str, bytes] = {}


def next_link(value: str | None) -> str | None:
    match = re.search(r'<([^>]+)>\s*;\s*rel="next"', value or "")
    return match.group(1) if match else None


def ci_job(job: int, base: str, token_index: int, token: str, expected: dict, tally: Tally) -> None:
    """GET the repository, its events pages 1–3 (following rel="next"), a user, the open pull
    requests: gzip asked for, the token as a Bearer credential, one kept-alive connection."""
    host, port = base.removeprefix("http://").split(":")
    counter = [0]
    connection = CountingConnection(host, int(port), counter)
    headers = {"Accept-Encoding": "gzip", "Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
               "User-Agent": f"freshet-bench-ci/{job}"}
    latencies, cache, etags, bodies, problems = [], {}, [], {}, []
    counts = {"wrong": 0, "not_gzip": 0, "left": 0}

    def get(kind: str, path: str):
        """One GET: (body decoded, response), or None when it failed (noted in problems)."""
        started = time.perf_counter()
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        raw = response.read()
        latencies.append(time.perf_counter() - started)
        if response.status != 200:
            problems.append(f"{kind}: status {response.status}")
            return None
        x_cache = response.getheader("X-Cache")
        if x_cache:
            cache[x_cache] = cache.get(x_cache, 0) + 1
        body = raw
        if (response.getheader("Content-Encoding") or "").lower() != "gzip":
            counts["not_gzip"] += 1
        else:
            try:
                body = gzip.decompress(raw)
            except (OSError, EOFError) as error:
                problems.append(f"{kind}: gzip does not decode ({error})")
                return None
        digest = hashlib.sha256(body).hexdigest()
        bodies.setdefault(digest, body)
        etags.append((digest, token_index, response.getheader("ETag") or ""))
        return body, response

    try:
        answer = get("repo", f"/repos/{REPO}")
        if answer and json.loads(answer[0]).get("permissions") != expected[token_index]:
            counts["wrong"] += 1
        path = f"/repos/{REPO}/events?per_page={PER_PAGE}"
        for page in (1, 2, 3):
            answer = get(f"events page {page}", path)
            if answer is None or page == 3:
                break
            url = next_link(answer[1].getheader("Link"))
            if url is None:
                problems.append(f"events page {page}: no rel=\"next\" in Link")
                break
            if not url.startswith(base + "/"):
                counts["left"] += 1  # a URL that leaves the proxy (direct: the simulator): not followed
                break
            path = url[len(base):]
        get("user", f"/users/{USERS[(job // TOKENS) % len(USERS)]}")
        get("pulls", f"/repos/{REPO}/pulls?per_page={PER_PAGE}")
    except Exception as error:  # noqa: BLE001 — any failure of a job is counted as an error, not a crash
        problems.append(f"job {job}: {type(error).__name__}: {error}")
    finally:
        connection.close()
    with tally.lock:
        tally.latencies += latencies
        tally.answers += len(latencies)
        tally.wire += counter[0]
        tally.errors += problems
        tally.left_proxy += counts["left"]
        tally.not_gzip += counts["not_gzip"]
        tally.wrong_permissions += counts["wrong"]
        for key, value in cache.items():
            tally.cache[key] = tally.cache.get(key, 0) + value
        tally.etags += etags
        for digest, body in bodies.items():
            tally.bodies.setdefault(digest, body)


# MARK: - One mode


def nearest_rank(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def run_mode(name: str, flags, bins: dict[str, Path], work: Path, tokens: list[str], expected: dict,
             concurrency: int) -> dict:
    mode_work = work / f"team-{name}"
    mode_work.mkdir()
    sim = Simulator(bins["freshet-sim"], mode_work)
    cluster = None
    script = ROOT / "scripts" / "pg-cluster"
    proxies = []
    try:
        if flags is None:
            bases = [sim.url]
        else:
            # Its own directory under the system's temp dir: the postgres user must reach it.
            cluster = Path(tempfile.mkdtemp(prefix=f"freshet-team-{name}-pg."))
            url = run(["bash", str(script), "start", str(cluster)], timeout=120).stdout.strip()
            bases = []
            for side in ("a", "b"):
                child, base, _ = start_freshet(bins["freshet"], sim.url, work, f"team-{name}-{side}",
                                               ("--store", url, *flags), {"PGPASSWORD": PG_PASSWORD})
                proxies.append(child)
                bases.append(base)
        sim.reset_log()
        tally = Tally()
        jobs = [(job, bases[(job // TOKENS) % len(bases)], job % TOKENS) for job in range(TOKENS * JOBS_PER_TOKEN)]
        started = time.monotonic()
        pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix=f"team-{name}")
        try:
            futures = [pool.submit(ci_job, job, base, index, tokens[index], expected, tally) for job, base, index in jobs]
            deadline = started + MODE_BUDGET
            for future in futures:
                future.result(timeout=max(1, deadline - time.monotonic()))
        except FuturesTimeout:
            fail(f"team: {name}: the jobs took more than {MODE_BUDGET} s")
        finally:
            pool.shutdown(wait=False, cancel_futures=True)  # what still runs ends when its servers stop, below
        wall = time.monotonic() - started
        for child in proxies:
            if not child.alive():
                fail(f"{child.name} exited during the jobs: {child.tail()}")
        limits = sim.request("GET", "/_sim/ratelimits")
        entries = [e for e in sim.log_entries() if e["path"].startswith(("/repos/", "/users/"))]
        # Every answer's ETag must be the one the simulator gives its own token.
        known: dict[tuple[str, int], str] = {}
        wrong_etag = 0
        for digest, index, etag in tally.etags:
            key = (digest, index)
            if key not in known:
                known[key] = sim_etag(tally.bodies[digest], tokens[index])
            if etag != known[key]:
                wrong_etag += 1
        used = {label(t): 0 for t in tokens}
        for entry in limits:
            if entry.get("credential") in used and entry.get("resource") == "core":
                used[entry["credential"]] = entry["used"]
        statuses: dict[int, int] = {}
        labels = {f"Bearer {t}": label(t) for t in tokens}
        full: dict[tuple[str, str], list[dict]] = {}
        for entry in entries:
            statuses[entry["status"]] = statuses.get(entry["status"], 0) + 1
            if entry["status"] == 200:
                who = labels.get(entry["headers"].get("authorization", ""), "?")
                full.setdefault((who, entry["path"]), []).append(entry)
        # Full answers beyond the first for one token and URL: each spent a unit a cache could have saved.
        extra = {key: found for key, found in full.items() if len(found) > 1}
        for (who, path), found in list(extra.items())[:5] if flags and "credential" in flags else ():
            log(f"team: {name}: {len(found)} full answers for {who} {path}: " + "; ".join(
                f"#{e['id']} {e['headers'].get('user-agent', '?')} conditional={'if-none-match' in e['headers']}" for e in found))
        return {
            "mode": name, "units": used, "units_total": sum(used.values()), "origin": len(entries),
            "origin_status": statuses, "origin_body_bytes": sum(e.get("bytesSent", 0) for e in entries),
            "client_bytes": tally.wire, "answers": tally.answers, "p50": nearest_rank(tally.latencies, 0.5),
            "p99": nearest_rank(tally.latencies, 0.99), "wrong_permissions": tally.wrong_permissions,
            "wrong_etag": wrong_etag, "left_proxy": tally.left_proxy, "not_gzip": tally.not_gzip,
            "errors": tally.errors, "cache": tally.cache, "wall": wall,
            "repeated_full": sum(len(found) - 1 for found in extra.values()),
        }
    finally:
        for child in proxies:
            child.stop()
        sim.stop()
        if cluster is not None:
            run(["bash", str(script), "stop", str(cluster)], timeout=120, check=False)


# MARK: - The case


def case_team(args, bins: dict[str, Path], tools: dict[str, str], sim: Simulator, work: Path, out: list[str], summary: dict):
    tokens = team_tokens()
    # Each token's permissions, asked once straight from the simulator (bench/proxy-load's own
    # instance; every mode below runs against a fresh one, so this spends nothing there).
    expected = {}
    for index, token in enumerate(tokens):
        connection = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=REQUEST_TIMEOUT)
        try:
            connection.request("GET", f"/repos/{REPO}", headers={"Authorization": f"Bearer {token}"})
            response = connection.getresponse()
            body = response.read()
        finally:
            connection.close()
        if response.status != 200:
            fail(f"team: GET /repos/{REPO} with token {label(token)} answered {response.status}")
        expected[index] = json.loads(body)["permissions"]
        # The wrong-token check below recomputes the simulator's ETags: make sure it still can.
        if response.getheader("ETag") != sim_etag(body, token):
            fail("team: freshet-sim's ETag is not W/\"hex128(body NUL token)\" any more; update cases_team.sim_etag")
    log("team: tokens " + ", ".join(f"{label(t)} ({_role_name(expected[i])})" for i, t in enumerate(tokens)))

    results = []
    for name, flags, _ in MODES:
        log(f"team: {name} …")
        result = run_mode(name, flags, bins, work, tokens, expected, args.team_concurrency)
        log(f"team: {name}: units {result['units_total']} ({', '.join(str(v) for v in result['units'].values())}), "
            f"origin {result['origin']} {result['origin_status']}, client bytes {result['client_bytes']:,}, "
            f"p50 {result['p50'] * 1000:.1f} ms, p99 {result['p99'] * 1000:.1f} ms, wrong token "
            f"{result['wrong_permissions']}/{result['wrong_etag']}, errors {len(result['errors'])}, {result['wall']:.1f} s")
        results.append(result)

    direct = results[0]
    problems: list[str] = []
    rows = []
    for (name, _, title), r in zip(MODES, results):
        units = " / ".join(str(r["units"][label(t)]) for t in tokens)
        origin = f"{r['origin']:,}" + (f" ({', '.join(f'{n} × {s}' for s, n in sorted(r['origin_status'].items()))})" if r["origin"] else "")
        rows.append([title, units, f"{r['units_total']:,}", fmt_x(r["units_total"] / direct["units_total"]) if direct["units_total"] else "—",
                     origin, f"{r['origin_body_bytes']:,}", f"{r['client_bytes']:,}", f"{r['p50'] * 1000:.1f} ms",
                     f"{r['p99'] * 1000:.1f} ms", str(r["wrong_permissions"] + r["wrong_etag"]),
                     str(len(r["errors"]) + r["left_proxy"] + r["not_gzip"])])
        wrong = r["wrong_permissions"] + r["wrong_etag"]
        if wrong:
            problems.append(f"{name}: {wrong} answers served to the wrong token")
        if r["errors"] or r["left_proxy"] or r["not_gzip"]:
            problems.append(f"{name}: {len(r['errors'])} errors, {r['left_proxy']} Link URLs leaving the proxy, "
                            f"{r['not_gzip']} answers not gzip" + (f" (first: {r['errors'][0]})" if r["errors"] else ""))
        if r["answers"] != TOKENS * JOBS_PER_TOKEN * 6:
            problems.append(f"{name}: {r['answers']} answers, expected {TOKENS * JOBS_PER_TOKEN * 6}")
    best = results[-1]
    saved = 1 - best["units_total"] / direct["units_total"] if direct["units_total"] else float("nan")
    met = saved >= 0.9 and not best["wrong_permissions"] and not best["wrong_etag"]
    if not met:
        problems.append(f"target not met: {saved:.1%} fewer units than direct with --partition credential --revalidate always")

    jobs = TOKENS * JOBS_PER_TOKEN
    out += [f"{TEAM_HEADING} — {TOKENS} tokens × {JOBS_PER_TOKEN} CI jobs, straight and through two `freshet proxy` on one PostgreSQL",
            "",
            f"Origin: a fresh freshet-sim per mode (budgets per token, 5000/hour core, a `304` to an authorized conditional "
            f"request free, as GitHub). A CI job is one client (Python's http.client, one kept-alive connection, "
            f"`Accept-Encoding: gzip` decoded by the client, `Authorization: Bearer` its token) doing, in order: "
            f"`GET /repos/{REPO}`, its events page 1 then pages 2 and 3 by following `rel=\"next\"` in `Link`, "
            f"`GET /users/LOGIN` (one of {len(USERS)}), `GET /repos/{REPO}/pulls` — 6 requests. {jobs} jobs "
            f"({TOKENS} tokens × {JOBS_PER_TOKEN}), {args.team_concurrency} at a time; through the proxies, each token's jobs "
            f"alternate between the two, which share a fresh throwaway PostgreSQL (`scripts/pg-cluster`) per mode. "
            f"*Units* are each token's core budget spent (`/_sim/ratelimits`), in token order; *origin* is the requests "
            f"the simulator answered (its log), *origin body bytes* what it sent in bodies, *client bytes* every byte the "
            f"clients received (heads included, gzip as sent). Latency is per request, nearest rank over all "
            f"{jobs * 6} requests. *Wrong token* counts answers whose `permissions` (repository) differ from what that "
            f"token gets straight from the simulator, plus answers whose ETag is not the one the simulator gives that "
            f"token for that body; *errors* counts non-200s, undecodable or non-gzip answers and `Link` URLs that "
            f"leave the proxy.",
            "",
            *table(["mode", "units per token", "units", "÷ direct", "origin requests", "origin body bytes",
                    "client bytes", "p50", "p99", "wrong token", "errors"], rows, "lrrrrrrrrrr"),
            "",
            "- Proxy answers (`X-Cache`): " + "; ".join(
                f"{name} " + ", ".join(f"{k} {v}" for k, v in sorted(r["cache"].items())) for (name, flags, _), r in zip(MODES, results) if flags is not None) + ".",
            f"- Target (issue #30): ≥ 90% fewer units than direct with `--partition credential --revalidate always`: "
            f"**{'met' if met else 'NOT met'}** ({best['units_total']} against {direct['units_total']}: {saved:.1%} fewer; "
            f"wrong-token answers {best['wrong_permissions'] + best['wrong_etag']}).",
            "- Origin `200`s beyond the first for one token and URL (each a unit a per-credential cache could have "
            "saved): " + ", ".join(f"{name} {r['repeated_full']}" for (name, flags, _), r in zip(MODES, results)
                                    if flags and "credential" in flags) + ".",
            f"- Wall time per mode: " + ", ".join(f"{name} {r['wall']:.1f} s" for (name, _, _), r in zip(MODES, results)) + "."]
    shared, partition = results[1], results[2]
    per_token = partition["units_total"] // TOKENS if partition["units_total"] % TOKENS == 0 else partition["units_total"] / TOKENS
    out += ["", "What it shows:", "",
            f"- A shared cache saves nothing here: GitHub answers a token with `private`, which a shared cache may not "
            f"keep, so every request of the default proxies reached the origin and spent a unit "
            f"({shared['units_total']} against {direct['units_total']} direct).",
            f"- `--partition credential` keeps each token's answers for that token: each token paid once per URL it used "
            f"(per token {per_token}: the repository, 3 events pages, {len(USERS)} users, the pull requests), "
            f"{1 - partition['units_total'] / direct['units_total']:.1%} fewer units than direct, and the origin sent "
            f"{partition['origin_body_bytes']:,} body bytes instead of {direct['origin_body_bytes']:,}; answers came from "
            f"the store (p50 {partition['p50'] * 1000:.1f} ms).",
            f"- `--revalidate always` spends the same units but asks the origin before every answer: "
            f"{best['origin_status'].get(304, 0)} free `304`s, so no answer is older than one round trip, for "
            f"{best['origin_body_bytes']:,} origin body bytes; its latency is a round trip to the origin through the proxy "
            f"(p50 {best['p50'] * 1000:.1f} ms against {direct['p50'] * 1000:.1f} ms direct).",
            f"- The clients received gzip in every mode ({direct['client_bytes'] / direct['answers'] / 1024:.1f} KiB per "
            f"answer direct, {best['client_bytes'] / best['answers'] / 1024:.1f} KiB through the proxies, which add `Via`, "
            f"`X-Cache` and `Cache-Status`); every `Link` followed stayed on the proxy the job used.",
            "- No answer went to the wrong token in any mode (`permissions` and ETags checked on every answer)."]
    if best["repeated_full"]:
        out.append(f"- With `--revalidate always`, {best['repeated_full']} URL(s) of one token were fetched in full twice: "
                   "the first requests for it reached both proxies at once and the second proxy went to the origin "
                   "without a validator instead of waiting for the first one's answer (`--partition credential` alone: "
                   f"{partition['repeated_full']}).")
    out.append("- Latencies depend on the build and on the machine's load (see the date line); units, origin requests "
               "and wrong-token counts do not.")
    if problems:
        out.append("- **Problems:** " + "; ".join(problems) + ".")
    summary["team"] = {"results": results, "saved": saved, "met": met, "problems": problems,
                       "tokens": [label(t) for t in tokens]}
    return problems


def _role_name(permissions: dict) -> str:
    for key in ("admin", "maintain", "push", "triage"):
        if permissions.get(key):
            return key
    return "pull"
