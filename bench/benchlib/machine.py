"""Notes on where the figures come from: the machine, its load, the tools' versions and which code
the binaries were built from."""
from __future__ import annotations

import os
import re
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from .common import ROOT, VENV


def output(cmd) -> str | None:
    """A command's stdout, stripped (whatever its exit status), or None when it cannot run in 30 s."""
    try:
        return subprocess.run(cmd, text=True, capture_output=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None


def git(*args) -> str | None:
    return output(["git", "-C", str(ROOT), *args])


def linked(binary: Path) -> str:
    """When `binary` was written (linked), UTC."""
    return datetime.fromtimestamp(binary.stat().st_mtime, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def machine() -> dict:
    def sh(cmd):
        text = output(cmd)
        return "?" if text is None else text
    cpu = "?"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"nproc": sh(["nproc"]), "arch": sh(["uname", "-m"]), "kernel": sh(["uname", "-sr"]), "cpu": cpu,
            "swift": sh(["swift", "--version"]).splitlines()[0] if sh(["swift", "--version"]) else "?",
            "python": sh([str(VENV / "bin" / "python"), "--version"]) if (VENV / "bin" / "python").exists() else "?",
            "node": sh(["node", "--version"]),
            "peers": sh([str(VENV / "bin" / "python"), "-c", "import aiohttp, httpx; print(f'aiohttp {aiohttp.__version__}, httpx {httpx.__version__}')"])
            if (VENV / "bin" / "python").exists() else "?"}


def build_note(freshet: Path, built_now: bool) -> str:
    """bench/run's note on which code the binaries are: when `freshet` was linked, and the state of the tree now."""
    def sh_git(*args):
        text = git(*args)
        return "?" if text is None else text
    dirty = sh_git("status", "--porcelain", "--", "Sources", "Package.swift", "bench/client")
    return (f"release build into .build-bench ({'built by this run' if built_now else '--no-build: built earlier'}); "
            f"`freshet` linked {linked(freshet)} from the working tree; HEAD is {sh_git('rev-parse', '--short', 'HEAD')}"
            + (f", {len(dirty.splitlines())} file(s) under Sources/, Package.swift or bench/client uncommitted" if dirty
               else ", nothing uncommitted under Sources/"))


def build_info(bin_dir: Path, config: str) -> str:
    """bench/proxy-load's note on which code the binaries in `bin_dir` are."""
    commit = git("rev-parse", "--short", "HEAD")
    dirty = git("status", "--porcelain", "--", "Sources", "Package.swift") if commit is not None else None
    if commit is None or dirty is None:
        return f"{config} build in {bin_dir}"
    note = f", {len(dirty.splitlines())} file(s) under Sources/ or Package.swift uncommitted" if dirty else ", no uncommitted changes"
    return (f"{config} build: `freshet` linked {linked(bin_dir / 'freshet')} from the working tree (HEAD now {commit}{note}; the tree may have "
            "changed since the build)")


def load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (1 min) / {five:.2f} (5 min)"


def load_note() -> str:
    builds = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                name = Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                continue
            if name.startswith(("swift-frontend", "swift-build", "swift-test", "swift-driver", "clang", "ld", "xctest")) \
                    or name.endswith("PackageTests.xctest"):
                builds += 1
    return f"load average {load_average()}, {builds} compiler/test processes running"


def cpu_times() -> list[int] | None:
    """The machine's CPU time counters (the first line of /proc/stat), for ``steal_note``."""
    try:
        return [int(n) for n in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None


def steal_note(before: list[int] | None) -> str:
    """How much of the CPU time since `before` the hypervisor gave to other guests (steal): on a
    shared virtual machine that time is taken from every process at random, and ratios to a fixed
    yardstick (the fan-out's physical limit) suffer most."""
    after = cpu_times()
    if before is None or after is None or len(after) < 8:
        return "steal time not known"
    deltas = [b - a for a, b in zip(before, after)]
    total = sum(deltas[:8])  # user nice system idle iowait irq softirq steal (guest time is in user)
    return f"{100 * deltas[7] / total:.0f} % of the CPU time stolen by the hypervisor (/proc/stat)" if total > 0 \
        else "steal time not known"


def version_of(cmd, pattern: str) -> str:
    """The first group of `pattern` in what `cmd` prints (stdout and stderr), or "?"."""
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        match = re.search(pattern, result.stdout + result.stderr)
        return match.group(1) if match else "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def fs_type(path: Path) -> str:
    try:
        result = subprocess.run(["df", "--output=fstype", str(path)], capture_output=True, text=True, timeout=10)
        return result.stdout.split()[-1]
    except (OSError, subprocess.TimeoutExpired, IndexError):
        return "?"
