"""What the benchmarks run: Freshet's binaries (swift build into .build-bench), the Python peers'
virtual environment, and the system tools (curl, wrk, nginx, varnishd) installed with apt-get."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from . import common
from .common import PEERS, ROOT, SCRATCH, VENV, fail, log, run
from .processes import tool

APT_PACKAGES = {"wrk": "wrk", "nginx": "nginx", "varnishd": "varnish"}


def build(*, config: str = "release", products=None, skip: bool = False) -> Path:
    """Builds into .build-bench and returns the directory of the binaries. products=None: one `swift
    build` of every executable of the package; else one `swift build --product P` for each. With
    skip=True nothing is built: only the directory is asked for."""
    # A release build is the one scripts/install makes (scripts/release-build: its flags).
    cmd = ([str(ROOT / "scripts" / "release-build")] if config == "release" else ["swift", "build", "-c", config]) \
        + ["--scratch-path", str(SCRATCH)]
    for product in [] if skip else (products or [None]):
        invocation = cmd + ([] if product is None else ["--product", product])
        log("building: " + " ".join(invocation).replace(str(ROOT) + "/", ""))
        started = time.monotonic()
        result = run(invocation, timeout=1800, check=False)
        if result.returncode != 0:
            fail(f"build failed (exit {result.returncode}):\n{(result.stdout or '')[-3000:]}{(result.stderr or '')[-3000:]}")
        log(f"  built in {time.monotonic() - started:.0f} s")
    return Path(run(cmd + ["--show-bin-path"], timeout=300).stdout.strip())


def binaries(bin_dir: Path, names) -> dict[str, Path]:
    """{name: path} of executables in `bin_dir`; fails when one is missing."""
    paths = {name: bin_dir / name for name in names}
    for path in paths.values():
        if not os.access(path, os.X_OK):
            fail(f"{path} is missing (not built?)")
    return paths


def python_peers() -> Path:
    """bench/.venv with aiohttp and httpx (installed from PyPI when missing); returns its python."""
    python = VENV / "bin" / "python"
    if not python.exists():
        log("creating bench/.venv")
        run([sys.executable, "-m", "venv", str(VENV)], timeout=300)
    probe = run([str(python), "-c", "import aiohttp, httpx"], timeout=60, check=False)
    if probe.returncode != 0:
        log("installing aiohttp and httpx into bench/.venv (PyPI)")
        run([str(python), "-m", "pip", "install", "--quiet", "-r", str(PEERS / "requirements.txt")], timeout=600)
    return python


def ensure_tools(no_install: bool, need_peers: bool) -> dict[str, str]:
    """Paths of curl, wrk, nginx and varnishd; installs the missing ones with apt-get (root only)."""
    wanted = {"curl": "curl"}
    if need_peers:
        wanted.update(APT_PACKAGES)
    missing = {name: package for name, package in wanted.items() if not tool(name)}
    if missing:
        packages = sorted(set(missing.values()))
        if no_install:
            fail(f"missing {', '.join(missing)}; install the Debian packages {' '.join(packages)} "
                 "(or run without --no-install, as root)")
        if os.geteuid() != 0 or not tool("apt-get"):
            fail(f"missing {', '.join(missing)} and cannot apt-get install {' '.join(packages)} "
                 "(needs root and apt-get); install them and run again")
        apt_install(packages)
        still = [name for name in missing if not tool(name)]
        if still:
            fail(f"apt-get installed {' '.join(packages)} but {', '.join(still)} is still missing")
    return {name: tool(name) for name in wanted}


def apt_install(packages: list[str]) -> None:
    """apt-get update + install, services kept from starting (a policy-rc.d that denies, only if none exists)."""
    policy = Path("/usr/sbin/policy-rc.d")
    created = False
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        if not policy.exists():
            policy.write_text(f"#!/bin/sh\n# written by {common.PROGRAM} for the duration of apt-get install\nexit 101\n")
            policy.chmod(0o755)
            created = True
        log(f"apt-get update; apt-get install {' '.join(packages)}")
        update = run(["apt-get", "update", "-qq"], timeout=300, env=env, check=False)
        if update.returncode != 0:
            fail(f"apt-get update failed (exit {update.returncode}): {update.stderr[-1000:]}")
        install = run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages], timeout=900, env=env,
                      check=False)
        if install.returncode != 0:
            fail(f"apt-get install {' '.join(packages)} failed (exit {install.returncode}): "
                 f"{(install.stderr or install.stdout)[-1500:]}")
    finally:
        if created:
            policy.unlink(missing_ok=True)
