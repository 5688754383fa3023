"""What the benchmarks write: the Headline and Targets lines, bench/RESULTS.md (bench/run owns
everything above its "## Proxy" heading, bench/proxy-load the Proxy section up to "## Profiles",
which is written by hand) and the README's headline lines."""
from __future__ import annotations

import math

from .cases_proxy import cpu_per_answer
from .cases_wire import WIRE_TARGET
from .common import README, RESULTS, command_line, fmt_ms, fmt_s, fmt_x

PROXY_HEADING = "## Proxy"
PROFILES_HEADING = "## Profiles"
PROXY_PLACEHOLDER = "<!-- proxy: placeholder written by bench/run; bench/proxy-load's own text replaces it -->"
README_BEGIN = "<!-- bench:headline:begin -->"
README_END = "<!-- bench:headline:end -->"


FANOUT_TARGET = 1.15  # issue 35: the cold fan-out within 1.15× the physical limit
CPU_TARGET = 1.2  # issue 35: client CPU per request at most 1.2× raw AsyncHTTPClient's


def headline(hn, tp, feed, warm=None, proxy=None, wire=None) -> list[str]:
    lines = []
    if wire:
        parts = [f"{r['label']} {r['gzip_body']:,} body bytes against {r['identity_body']:,} without gzip "
                 f"({fmt_x(r['gzip_body'] / max(r['identity_body'], 1))})" for r in wire.values()]
        lines.append("- Bytes on the wire, transparent compression: " + "; ".join(parts) + ".")
    if hn:
        f = hn["freshet"]
        lines.append(f"- HN fan-out ({hn['N']} stories, {hn['L']} ms per request, concurrency {hn['C']}): Freshet "
                     f"{fmt_s(f['wall'])} = {fmt_x(f['wall'] / hn['limit'])} the physical limit ({fmt_s(hn['limit'])}); "
                     f"the peers take aiohttp {fmt_x(hn['aiohttp']['wall'] / f['wall'])}, Node fetch "
                     f"{fmt_x(hn['node']['wall'] / f['wall'])}, the tutorial shape {fmt_x(hn['tutorial']['wall'] / f['wall'])} "
                     f"Freshet's time (whole process; above 1× Freshet is faster). At most {hn['in_flight']} requests were in flight.")
    if tp:
        lines.append(f"- Client throughput ({tp['N']:,} GETs, concurrency {tp['C']}): Freshet {tp['freshet']:,.0f} req/s = "
                     f"{fmt_x(tp['freshet'] / tp['ahc'])} raw AsyncHTTPClient ({tp['ahc']:,.0f}), using "
                     f"{tp['freshet_cpu_us']:.0f} µs of client CPU per request against AsyncHTTPClient's {tp['ahc_cpu_us']:.0f}"
                     + ("" if math.isnan(tp.get("freshet_instr", math.nan)) else
                        f" and {tp['freshet_instr']:,.0f} instructions against {tp['ahc_instr']:,.0f} "
                        f"({fmt_x(tp['freshet_instr'] / tp['ahc_instr'])}, callgrind)") + "; URLSession "
                     f"{tp['urlsession']:,.0f}, httpx {tp['httpx']:,.0f}, aiohttp {tp['aiohttp']:,.0f}, Node fetch {tp['node']:,.0f}.")
    if feed:
        lines.append(f"- Warm feed: within freshness {fmt_ms(feed['fresh_wall'])} and {feed['fresh_wire']:,.0f} bytes received; "
                     f"`--refresh` (304) {fmt_ms(feed['refresh_wall'])} and {feed['refresh_wire']:,.0f} bytes received "
                     f"(headers only; the first run received {feed['cold_wire']:,}); first output from the store with the "
                     f"network unreachable {fmt_ms(feed['offline_tty_first'])} to a terminal, "
                     f"{fmt_ms(feed['offline_pipe_first'])} to a pipe.")
    if warm:
        lines.append(f"- Warm runs (no request): `freshet feed` {fmt_ms(warm['feed']['wall'])} = {fmt_x(warm['feed']['ratio'])} "
                     f"and `freshet hn --limit {warm['N']}` {fmt_ms(warm['hn']['wall'])} = {fmt_x(warm['hn']['ratio'])} "
                     f"`freshet --version` ({fmt_ms(warm['version']['wall'])}; {fmt_ms(warm['feed']['beyond'])} and "
                     f"{fmt_ms(warm['hn']['beyond'])} beyond it)"
                     + (f"; `freshet feed` on a {warm['big_store_mib']:.0f} MiB store {fmt_ms(warm['feed-big']['wall'])} = "
                        f"{fmt_x(warm['feed-big']['ratio'])}" if "feed-big" in warm else "") + ".")
    if proxy and "peers" in proxy:
        p = proxy["peers"]
        lines.append(f"- Proxy cache hits (wrk, 64 connections, ~2 KiB JSON): freshet proxy {p['freshet']['rps']:,.0f} req/s = "
                     f"{fmt_x(proxy['ratio_nginx'])} nginx proxy_cache ({p['nginx']['rps']:,.0f}) and "
                     f"{fmt_x(proxy['ratio_varnish'])} Varnish ({p['varnish']['rps']:,.0f})" + hit_instructions(proxy) + ".")
    if proxy and "pass" in proxy:
        s = proxy["pass"]["stats"]
        lines.append(f"- Proxy pass-through (wrk, 64 connections, every request to the origin): misses {s['miss']['rps']:,.0f} req/s = "
                     f"{fmt_x(proxy['pass']['ratio_miss'])} and `--revalidate always` revalidations {s['revalidate']['rps']:,.0f} = "
                     f"{fmt_x(proxy['pass']['ratio_revalidate'])} nginx `proxy_pass` ({s['nginx']['rps']:,.0f})"
                     + (f"; the plainest SwiftNIO forwarder (bench/forwarder) {fmt_x(proxy['pass']['ratio_forwarder'])}"
                        if "ratio_forwarder" in proxy["pass"] else "")
                     + (f"; CPU per answer {cpu_per_answer(s['miss']):.0f} µs (misses), "
                        f"{cpu_per_answer(s['revalidate']):.0f} (revalidations), "
                        f"{cpu_per_answer(s['nio']):.0f} (the forwarder) against nginx's "
                        f"{cpu_per_answer(s['nginx']):.0f}, of which user space "
                        f"{s['miss']['user_us']:.0f}, {s['revalidate']['user_us']:.0f}, {s['nio']['user_us']:.0f} and "
                        f"{s['nginx']['user_us']:.0f}" if "user_us" in s["nginx"] else "") + ".")
    if hn:
        lines.append(f"- Memory: peak RSS of `freshet hn --limit {hn['N']}` {hn['freshet']['rss_kib'] / 1024:.0f} MiB.")
    return lines


def targets(hn, tp, feed, warm=None, proxy=None, wire=None) -> list[str]:
    lines = []
    if wire and "feed" in wire:
        r = wire["feed"]
        ratio = r["gzip_body"] / max(r["identity_body"], 1)
        lines.append(f"- The cold feed's body with gzip at most {WIRE_TARGET}× identity: {'met' if ratio <= WIRE_TARGET else 'NOT met'} "
                     f"({fmt_x(ratio)}).")
    if hn:
        f = hn["freshet"]["wall"]
        peers = {k: hn[k]["wall"] for k in ("aiohttp", "node", "tutorial")}
        ok = f <= FANOUT_TARGET * hn["limit"]
        lines.append(f"- Cold HN fan-out within {FANOUT_TARGET}× of the limit: {'met' if ok else 'NOT met'} ({fmt_x(f / hn['limit'])}).")
        slower = [k for k, v in peers.items() if v <= f]
        lines.append("- HN fan-out faster than every peer (whole process): " + ("met." if not slower else f"NOT met (slower than {', '.join(slower)})."))
        work_slower = [k for k in ("aiohttp", "node") if hn[k]["work"] <= f]
        if work_slower:
            lines.append(f"  - against the peers' own fan-out-only time Freshet's whole process is slower than {', '.join(work_slower)}.")
    if tp:
        ratio = tp["freshet_cpu_us"] / tp["ahc_cpu_us"]
        lines.append(f"- Client CPU per request at most {CPU_TARGET}× raw AsyncHTTPClient's: {'met' if ratio <= CPU_TARGET else 'NOT met'} "
                     f"({fmt_x(ratio)}: {tp['freshet_cpu_us']:.0f} against {tp['ahc_cpu_us']:.0f} µs; req/s "
                     f"{fmt_x(tp['freshet'] / tp['ahc'])}).")
        if not math.isnan(tp.get("freshet_instr", math.nan)):
            instr = tp["freshet_instr"] / tp["ahc_instr"]
            lines.append(f"- Client instructions per request at most {CPU_TARGET}× raw AsyncHTTPClient's (callgrind): "
                         f"{'met' if instr <= CPU_TARGET else 'NOT met'} ({fmt_x(instr)}: {tp['freshet_instr']:,.0f} against "
                         f"{tp['ahc_instr']:,.0f}).")
    if feed:
        first = feed["offline_tty_first"]
        lines.append(f"- Warm feed first output under 50 ms: {'met' if first < 0.05 else 'NOT met'} ({fmt_ms(first)} to a terminal, "
                     f"{fmt_ms(feed['offline_pipe_first'])} to a pipe).")
    if warm:
        for key, name in (("feed", "`freshet feed`"), ("hn", f"`freshet hn --limit {warm['N']}`")):
            w = warm[key]
            extra = "" if not w["requests"] else f"; the runs made {w['requests']} requests, so they were not warm"
            lines.append(f"- Warm {name} (no request) within {w['target']}× `freshet --version`: "
                         f"{'met' if w['met'] else 'NOT met'} ({fmt_x(w['ratio'])}, per run {fmt_x(w['ratio_min'])}–"
                         f"{fmt_x(w['ratio_max'])}; {fmt_ms(w['beyond'])} beyond `--version`'s {fmt_ms(warm['version']['wall'])}{extra}).")
    if proxy is not None:
        if "peers" in proxy:
            p = proxy["peers"]
            lines.append(f"- Proxy cache hits at least {proxy['target']['ratio']}× nginx proxy_cache (`worker_processes auto`), p99 "
                         f"no higher: {'met' if proxy['target']['met'] else 'NOT met'} ({fmt_x(proxy['ratio_nginx'])}; p99 "
                         f"{p['freshet']['p99']:.2f} against {p['nginx']['p99']:.2f} ms; {fmt_x(proxy['ratio_varnish'])} Varnish"
                         + hit_instructions(proxy) + "; see the Proxy section).")
        else:
            lines.append(f"- Proxy cache hits at least 1.0× nginx proxy_cache: not measured ({proxy.get('error', 'see the Proxy section')}).")
        if "pass" in proxy:
            worst, bar = min(proxy["pass"]["ratio_miss"], proxy["pass"]["ratio_revalidate"]), proxy["pass"]["target"]
            lines.append(f"- Proxy pass-through at least {bar}× nginx `proxy_pass`: {'met' if worst >= bar else 'NOT met'} (misses "
                         f"{fmt_x(proxy['pass']['ratio_miss'])}, revalidations {fmt_x(proxy['pass']['ratio_revalidate'])}).")
    return lines


def write_results(sections: list[str], proxy_lines: list[str], proxy_summary: str, proxy_ran: bool) -> None:
    """Writes RESULTS.md: `sections`, then the Proxy section. The Proxy section belongs to
    bench/proxy-load (run with --write-results, it rewrites it itself) and is kept as it is, unless
    it is bench/run's own placeholder and bench/proxy-load ran this time without writing it, in which
    case the placeholder is rewritten with this run's proxy output."""
    kept = None
    if RESULTS.exists():
        text = RESULTS.read_text()
        index = text.find("\n" + PROXY_HEADING + "\n")
        own = index >= 0 and (PROXY_PLACEHOLDER in text[index:] or "this is the output bench/run saw" in text[index:])
        if index >= 0 and not (own and proxy_ran):
            kept = text[index + 1:]
    if kept is None:
        kept = "\n".join([PROXY_HEADING, "", PROXY_PLACEHOLDER, "",
                          "This section belongs to `bench/proxy-load` (cache hits of `freshet proxy` next to nginx and "
                          "Varnish; hits, misses and a stream through it); bench/run keeps it as it is once written there. Until then, "
                          f"this is the output bench/run saw ({proxy_summary}):", ""]
                         + (["```", *proxy_lines, "```"] if proxy_lines else ["(no output)"])) + "\n"
    RESULTS.write_text("\n".join(sections) + "\n\n" + kept)


def update_readme(lines: list[str]) -> str:
    text = README.read_text()
    section = text.find("## Tests and benchmarks")
    begin, end = text.find(README_BEGIN), text.find(README_END)
    if section < 0 or not (section < begin < end):
        return "README not updated: no headline markers in its \"Tests and benchmarks\" section."
    README.write_text(text[:begin + len(README_BEGIN)] + "\n" + "\n".join(lines) + "\n" + text[end:])
    return "README headline updated."


# MARK: - Main


def write_proxy_section(text: str) -> None:
    """bench/proxy-load's part of RESULTS.md: replaces its Proxy section (up to the hand-written Profiles)
    with `text`."""
    section = f"{PROXY_HEADING}\n\nWritten by `{command_line()}` (from the repository root); bench/run keeps this section as it is.\n\n{text}\n"
    tail = ""
    if RESULTS.exists():
        existing = RESULTS.read_text()
        # The hand-written profile findings after the Proxy section are kept as they are.
        profiles = existing.find("\n" + PROFILES_HEADING + "\n")
        if profiles >= 0:
            tail = "\n" + existing[profiles + 1:]
            existing = existing[:profiles + 1]
        index = existing.find("\n" + PROXY_HEADING + "\n")
        head = existing[:index + 1] if index >= 0 else existing.rstrip("\n") + "\n\n"
    else:
        head = "# Benchmark results\n\n"
    RESULTS.write_text(head + section + tail)


def _proxy_subsection_bounds(lines: list[str], heading: str) -> tuple[int, int, int] | None:
    """(start, stop, end of the Proxy section) of the subsection starting with `heading`; start is None
    when there is none (then stop is where one would be added); None without a Proxy section."""
    try:
        proxy = lines.index(PROXY_HEADING)
    except ValueError:
        return None
    end = next((i for i in range(proxy + 1, len(lines)) if lines[i].startswith("## ")), len(lines))

    def closing(i: int) -> bool:
        return lines[i].startswith("Load average at the end")

    start = next((i for i in range(proxy + 1, end) if lines[i].startswith(heading)), None)
    if start is None:
        return None, next((i for i in range(proxy + 1, end) if closing(i)), end), end
    return start, next((i for i in range(start + 1, end) if lines[i].startswith("### ") or closing(i)), end), end


def proxy_subsection(heading: str) -> str | None:
    """The text of the Proxy section's subsection starting with `heading`, if RESULTS.md has one."""
    if not RESULTS.exists():
        return None
    lines = RESULTS.read_text().split("\n")
    bounds = _proxy_subsection_bounds(lines, heading)
    if bounds is None or bounds[0] is None:
        return None
    return "\n".join(lines[bounds[0]:bounds[1]]).rstrip("\n") + "\n"


def write_proxy_subsection(heading: str, text: str) -> None:
    """Replaces one subsection of the Proxy section (the one whose line starts with `heading`, up to the
    next `### `, the run's closing "Load average at the end" line or the next `## `) with `text`; without
    one, adds `text` at the end of the Proxy section's subsections (before that closing line). The rest
    of RESULTS.md stays as it is."""
    existing = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    lines = existing.split("\n")
    bounds = _proxy_subsection_bounds(lines, heading)
    if bounds is None:
        RESULTS.write_text(existing.rstrip("\n") + f"\n\n{PROXY_HEADING}\n\n{text.rstrip()}\n")
        return
    start, stop, _ = bounds
    if start is None:
        start = stop
    block = text.rstrip("\n").split("\n") + [""]
    RESULTS.write_text("\n".join(lines[:start] + block + lines[stop:]))


def hit_instructions(proxy: dict) -> str:
    """"; instructions per hit …" when bench/proxy-load counted them, else nothing."""
    counts = proxy.get("hit_instructions") or {}
    freshet, nginx = counts.get("freshet", math.nan), counts.get("nginx", math.nan)
    if math.isnan(freshet) or math.isnan(nginx):
        return ""
    return f"; {freshet / 1000:,.1f}k instructions per hit against nginx's {nginx / 1000:,.1f}k ({fmt_x(freshet / nginx)}, callgrind)"
