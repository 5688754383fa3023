"""Child processes: servers started and stopped by their process group, commands timed whole
(wall, CPU, peak RSS), time to the first line of output, and CPU and RSS of live process trees."""
from __future__ import annotations

import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from . import common
from .common import OUT, ROOT, fail, run

TOOL_DIRS = ("/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/sbin", "/usr/local/bin")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class Child:
    """A server started here, in its own session, stopped by its process group (pgid = its pid)."""
    registry: list["Child"] = []

    def __init__(self, name: str, cmd, *, stdout: Path, stderr: Path, env=None, cwd=None):
        self.name = name
        self.stdout_path, self.stderr_path = stdout, stderr
        with open(stdout, "w") as out, open(stderr, "w") as err:
            self.process = subprocess.Popen([str(c) for c in cmd], stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                            env=env, cwd=cwd or ROOT, start_new_session=True)
        self.pid = self.process.pid
        self.exit_status = None
        self.stopped = False
        Child.registry.append(self)

    def alive(self) -> bool:
        return self.process.poll() is None

    def wait_for_line(self, pattern: str, timeout: float = 30) -> re.Match:
        """The match of the first stdout line that matches `pattern` (whole line, stripped); stops the
        child and fails when it exits first or prints no such line within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                for line in self.stdout_path.read_text().splitlines():
                    match = re.fullmatch(pattern, line.strip())
                    if match:
                        return match
            except OSError:
                pass
            if not self.alive():
                fail(f"{self.name} exited ({self.process.returncode}): {self.tail()}")
            time.sleep(0.05)
        self.stop()
        fail(f"{self.name} printed no line matching {pattern!r} within {timeout:.0f} s: {self.tail()}")

    def tail(self) -> str:
        text = ""
        for path in (self.stdout_path, self.stderr_path):
            try:
                text += path.read_text()[-1500:]
            except OSError:
                pass
        return text.strip()

    def stop(self, timeout: float = 15) -> int | None:
        """SIGTERM to the process group, then SIGKILL after `timeout` s; returns the leader's exit status."""
        if self.stopped:
            return self.exit_status
        if self.alive():
            try:
                os.killpg(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.process.wait(timeout=10)
        # Anything left in the group (workers of a leader that died first).
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.stopped = True
        self.exit_status = self.process.returncode
        return self.exit_status

    @classmethod
    def stop_all(cls) -> None:
        for child in reversed(cls.registry):
            try:
                child.stop()
            except Exception as error:  # keep stopping the others
                print(f"{common.PROGRAM}: stopping {child.name} (pid {child.pid}): {error}", file=sys.stderr)


def wait_listening(child: Child, port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not child.alive():
            fail(f"{child.name} exited ({child.process.returncode}) before listening: {child.tail()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    fail(f"{child.name} did not listen on 127.0.0.1:{port} within {timeout:.0f} s: {child.tail()}")


def free_port() -> int:
    """A free ephemeral port on 127.0.0.1 (bound to port 0, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tool(name: str) -> str | None:
    """The path of an executable: on PATH, else in the usual system directories."""
    found = shutil.which(name)
    if found:
        return found
    for directory in TOOL_DIRS:
        candidate = Path(directory) / name
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return None


# MARK: - Live process trees


def tree(pid: int) -> list[int]:
    """`pid` and all its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    result, queue = [], [pid]
    while queue:
        p = queue.pop()
        result.append(p)
        queue += children.get(p, [])
    return result


def cpu_times(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of `pid` and its descendants (live ones; reaped children's time included)."""
    user = system = 0
    for p in tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            user, system = user + int(fields[11]), system + int(fields[12])  # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return user / CLOCK_TICKS, system / CLOCK_TICKS


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of `pid` and its descendants (see `cpu_times`)."""
    return sum(cpu_times(pid))


def rss_kib(pid: int, whole_tree: bool = False) -> int:
    total = 0
    for p in (tree(pid) if whole_tree else [pid]):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


# MARK: - Timing a command whole


def timed(cmd, *, env=None, timeout=300.0, rss=False, cpu=None):
    """Runs `cmd`; returns (wall seconds, completed process, peak RSS in KiB or None).
    With rss=True it runs under `/usr/bin/time`; the process's user+system CPU seconds are then
    appended to the list `cpu`, if given."""
    rss_file = OUT / "rss.txt"
    if rss:
        cmd = ["/usr/bin/time", "-f", "%M %U %S", "-o", str(rss_file)] + list(cmd)
    start = time.perf_counter()
    result = run(cmd, env=env, timeout=timeout, check=False)
    wall = time.perf_counter() - start
    peak = None
    if rss:
        try:
            fields = rss_file.read_text().strip().splitlines()[-1].split()
            peak = int(fields[0])
            if cpu is not None:
                cpu.append(float(fields[1]) + float(fields[2]))
        except (OSError, ValueError, IndexError):
            peak = None
    return wall, result, peak


def timed_wait4(cmd, *, env, timeout: float):
    """Runs `cmd` with stdout and stderr to temporary files (no /usr/bin/time, so nothing is added to
    its start-up); returns (wall seconds, exit status, stdout, stderr, user+system CPU seconds, peak RSS KiB)
    from wait4(2). Killed after `timeout` seconds."""
    with tempfile.TemporaryFile(dir=OUT) as out, tempfile.TemporaryFile(dir=OUT) as err:
        done = threading.Event()
        start = time.perf_counter()
        process = subprocess.Popen(cmd, env=env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=err)

        def kill():
            if not done.is_set():
                os.kill(process.pid, signal.SIGKILL)
        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            done.set()
            timer.cancel()
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode == -signal.SIGKILL and wall >= timeout:
            fail(f"timed out after {timeout:.0f} s: {' '.join(cmd)}")
        out.seek(0)
        err.seek(0)
        return (wall, process.returncode, out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                usage.ru_utime + usage.ru_stime, usage.ru_maxrss)


def first_line_time(cmd, *, env, tty: bool, timeout=30.0):
    """Starts `cmd` with stdout on a pseudo-terminal (tty) or a pipe; returns (seconds until
    the first complete stdout line, seconds until exit, exit status, first line)."""
    start = time.perf_counter()
    if tty:
        master, slave = os.openpty()
        import fcntl
        import struct
        import termios
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 120, 0, 0))
        process = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.DEVNULL,
                                   cwd=ROOT)
        os.close(slave)
        reader = master
    else:
        process = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, cwd=ROOT)
        reader = process.stdout.fileno()
    buffer = b""
    first = None
    first_text = ""
    deadline = start + timeout
    try:
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                process.kill()
                fail(f"timed out after {timeout:.0f} s: {' '.join(cmd)}")
            ready, _, _ = select.select([reader], [], [], min(remaining, 1.0))
            if not ready:
                if process.poll() is not None and tty:
                    break
                continue
            try:
                chunk = os.read(reader, 65536)
            except OSError:  # EIO on the pty master once the child has exited
                chunk = b""
            if not chunk:
                break
            buffer += chunk
            if first is None and b"\n" in buffer:
                first = time.perf_counter() - start
                first_text = buffer.split(b"\n", 1)[0].decode(errors="replace")
        status = process.wait(timeout=max(1.0, deadline - time.perf_counter()))
    finally:
        if tty:
            os.close(master)
        elif process.stdout:
            process.stdout.close()
        if process.poll() is None:
            process.kill()
            process.wait()
    total = time.perf_counter() - start
    return (first if first is not None else float("nan")), total, status, first_text
