"""What every benchmark script needs: paths, logging, failing, running a command, medians,
number formats and Markdown tables."""
from __future__ import annotations

import math
import shlex
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parent.parent.parent
BENCH = ROOT / "bench"
OUT = BENCH / ".out"
VENV = BENCH / ".venv"
PEERS = BENCH / "peers"
RESULTS = BENCH / "RESULTS.md"
README = ROOT / "README.md"
PROXY_LOAD = BENCH / "proxy-load"
SCRATCH = ROOT / ".build-bench"

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only: never a proxy
STARTED = time.monotonic()

PROGRAM = "bench"  # the entry script's name, for messages; set by configure()
LOG_LABEL = ""     # shown before the elapsed time in log lines


def configure(program: str, log_label: str = "") -> None:
    """Names the running entry script (`bench/run`, `bench/proxy-load`) for messages and log lines."""
    global PROGRAM, LOG_LABEL
    PROGRAM, LOG_LABEL = program, log_label


def command_line() -> str:
    """The command as typed from the repository root, arguments quoted."""
    return PROGRAM + "".join(" " + shlex.quote(a) for a in sys.argv[1:])


class BenchError(Exception):
    """A benchmark cannot go on; the entry script reports it and exits non-zero."""


def log(message: str) -> None:
    label = f"{LOG_LABEL} " if LOG_LABEL else ""
    print(f"[{label}{time.monotonic() - STARTED:6.1f}s] {message}", file=sys.stderr, flush=True)


def fail(message: str) -> NoReturn:
    raise BenchError(message)


def run(cmd, *, timeout: float, env=None, cwd=None, check=True, capture=True) -> subprocess.CompletedProcess:
    """Runs a command to completion within `timeout` seconds, stdin from /dev/null; stdout and stderr
    are captured as text unless capture=False. A timeout, or a non-zero exit with check=True, fails."""
    try:
        result = subprocess.run([str(c) for c in cmd], cwd=cwd or ROOT, env=env, timeout=timeout, text=True,
                                stdout=subprocess.PIPE if capture else None,
                                stderr=subprocess.PIPE if capture else None, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        fail(f"timed out after {timeout:.0f} s: {' '.join(map(str, cmd))}")
    if check and result.returncode != 0:
        detail = (result.stderr or result.stdout or "")[-2000:] if capture else ""
        fail(f"exit {result.returncode}: {' '.join(map(str, cmd))}\n{detail}")
    return result


def med(values):
    values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return statistics.median(values) if values else float("nan")


def fmt_s(seconds: float) -> str:
    if math.isnan(seconds):
        return "—"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def fmt_ms(seconds: float) -> str:
    return "—" if math.isnan(seconds) else f"{seconds * 1000:.1f} ms"


def fmt_x(ratio: float) -> str:
    return "—" if math.isnan(ratio) else f"{ratio:.2f}×"


def row(cells) -> str:
    """One Markdown table row."""
    return "| " + " | ".join(cells) + " |"


def table(header: list[str], rows: list, align: str) -> list[str]:
    """A Markdown table: `align` has one letter per column, r (right) or l (left); each row is a
    list of cells or an already formatted row()."""
    lines = [row(header), row("---:" if a == "r" else "---" for a in align)]
    lines += [r if isinstance(r, str) else row(r) for r in rows]
    return lines
