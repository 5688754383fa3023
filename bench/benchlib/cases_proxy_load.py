"""bench/run's proxy case: bench/proxy-load run as a child with the binaries bench/run built; its
JSON summary comes back for the Headline and Targets."""
from __future__ import annotations

import json
import os
import signal
import subprocess

from .common import OUT, PROXY_LOAD, ROOT, log


def case_proxy(args, bins) -> tuple[str, list[str], dict | None]:
    if not (PROXY_LOAD.is_file() and os.access(PROXY_LOAD, os.X_OK)):
        line = "proxy: skipped (bench/proxy-load not present)"
        print(line, flush=True)
        return line, [], None
    log("proxy: running bench/proxy-load with the binaries just built (it starts its own simulator, proxies and "
        "peers, and writes the Proxy section of bench/RESULTS.md)")
    summary_path = OUT / "proxy-load.json"
    summary_path.unlink(missing_ok=True)
    # Its own budget ends it (cleanly, stopping what it started) a little before ours.
    process = subprocess.Popen([str(PROXY_LOAD), "--bin", str(bins["freshet"].parent), "--write-results",
                                "--json", str(summary_path), "--budget", str(max(60, int(args.proxy_timeout) - 30))],
                               cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=None, stdin=subprocess.DEVNULL)
    try:
        stdout, _ = process.communicate(timeout=args.proxy_timeout)
        output = stdout.rstrip()
        status = f"exit {process.returncode}"
    except BaseException as error:
        # SIGTERM by PID: its EXIT trap stops the simulator and proxy it started.
        os.kill(process.pid, signal.SIGTERM)
        try:
            stdout, _ = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            stdout, _ = process.communicate()
        if not isinstance(error, subprocess.TimeoutExpired):
            raise
        output = (stdout or "").rstrip()
        status = f"timed out after {args.proxy_timeout:.0f} s"
    print(output, flush=True)
    summary = None
    try:
        summary = json.loads(summary_path.read_text())
    except (OSError, ValueError):
        pass
    return f"proxy: bench/proxy-load {status}", output.splitlines(), summary
