"""bench/proxy-load's servers and clients: `freshet proxy`, nginx and Varnish in front of the
simulator, a raw HTTP/1.1 GET that shows every header, the cached JSON body, and wrk."""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
from pathlib import Path

from .common import fail, run
from .processes import Child, free_port, wait_listening


def start_freshet(freshet: Path, origin: str, work: Path, name: str, extra: tuple[str, ...] = (),
                  env_extra: dict[str, str] | None = None, wrapper: tuple[str, ...] = ()) -> tuple[Child, str, Path]:
    """`freshet proxy` on a free port with its own FRESHET_HOME; `wrapper` goes before the command
    (valgrind)."""
    home = work / f"home-{name}"
    env = dict(os.environ, FRESHET_HOME=str(home), NO_COLOR="1", **(env_extra or {}))
    child = Child(f"freshet proxy ({name})", [*wrapper, freshet, "proxy", "--origin", origin, "--listen", "127.0.0.1:0", *extra],
                  stdout=work / f"{name}.out", stderr=work / f"{name}.err", env=env)
    url = child.wait_for_line(r"listening on (http://127\.0\.0\.1:\d+)", timeout=120 if wrapper else 30).group(1)
    return child, url, home


def start_nginx(nginx: str, origin_port: int, work: Path, workers: str, cache: bool = True,
                wrapper: tuple[str, ...] = (), name: str | None = None) -> tuple[Child, str]:
    """nginx in front of the origin: `proxy_cache` when `cache`, else plain `proxy_pass` (keep-alive upstream).
    With a `wrapper` (valgrind) it runs as one process (`master_process off`): the wrapper sees the worker."""
    base = work / (name or ("nginx" if cache else "nginx-pass"))
    (base / "cache").mkdir(parents=True)
    (base / "tmp").mkdir()
    port = free_port()
    user = ""
    if os.geteuid() == 0:  # workers drop to nobody: they must be able to reach and write the cache
        user = "user nobody nogroup;"
        for path in (work, base):
            path.chmod(0o755)
        for path in (base / "cache", base / "tmp"):
            shutil.chown(path, "nobody", "nogroup")
    conf = base / "nginx.conf"
    conf.write_text(f"""# written by bench/proxy-load
{user}
worker_processes {workers};
{"master_process off;" if wrapper else ""}
pid {base}/nginx.pid;
error_log {base}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {base}/tmp/client;
    proxy_temp_path {base}/tmp/proxy;
    fastcgi_temp_path {base}/tmp/fastcgi;
    uwsgi_temp_path {base}/tmp/uwsgi;
    scgi_temp_path {base}/tmp/scgi;
    keepalive_requests 10000000;
    keepalive_timeout 75s;
    proxy_cache_path {base}/cache levels=1:2 keys_zone=bench:10m max_size=64m inactive=60m use_temp_path=off;
    upstream origin {{
        server 127.0.0.1:{origin_port};
        keepalive 16;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
{"            proxy_cache bench;" if cache else ""}
{"            add_header X-Cache-Status $upstream_cache_status always;" if cache else ""}
        }}
    }}
}}
""")
    child = Child("nginx", [*wrapper, nginx, "-g", "daemon off;", "-p", f"{base}/", "-c", conf, "-e", f"{base}/error.log"],
                  stdout=base / "nginx.out", stderr=base / "nginx.err")
    wait_listening(child, port, timeout=120 if wrapper else 30)
    return child, f"http://127.0.0.1:{port}"


def start_forwarder(forwarder: Path, origin_port: int, work: Path, wrapper: tuple[str, ...] = (),
                    name: str = "forwarder") -> tuple[Child, str]:
    """freshet-bench-forwarder (bench/forwarder: the plainest forwarder on SwiftNIO) on a free port;
    `wrapper` goes before the command (valgrind)."""
    child = Child("freshet-bench-forwarder", [*wrapper, forwarder, "0", str(origin_port)],
                  stdout=work / f"{name}.out", stderr=work / f"{name}.err")
    port = child.wait_for_line(r"listening on (\d+)", timeout=120 if wrapper else 30).group(1)
    return child, f"http://127.0.0.1:{port}"


def start_varnish(varnishd: str, origin_port: int, work: Path) -> tuple[Child, str]:
    base = work / "varnish"
    base.mkdir()
    port = free_port()
    # -j none: no privilege-separation jail (as root the unix jail would switch users and need the
    # workdir to be theirs); -T none: no management port; -F: foreground.
    child = Child("varnishd", [varnishd, "-F", "-a", f"127.0.0.1:{port}", "-b", f"127.0.0.1:{origin_port}",
                               "-n", base, "-s", "malloc,64m", "-j", "none", "-T", "none"],
                  stdout=work / "varnish.out", stderr=work / "varnish.err")
    wait_listening(child, port, timeout=60)  # it compiles its VCL with cc first
    return child, f"http://127.0.0.1:{port}"



def raw_get(url: str, timeout: float = 10) -> tuple[int, dict[str, str], bytes, int]:
    """One HTTP/1.1 GET over a fresh socket: (status, header fields (lower-case names), body, bytes on the wire)."""
    host, rest = url.removeprefix("http://").split("/", 1) if "/" in url.removeprefix("http://") else (url.removeprefix("http://"), "")
    address, port = host.split(":")
    assert address == "127.0.0.1"
    with socket.create_connection((address, int(port)), timeout=timeout) as s:
        s.sendall(f"GET /{rest} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    fields: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        key = name.strip().lower()
        fields[key] = (fields[key] + ", " if key in fields else "") + value.strip()
    if "chunked" in fields.get("transfer-encoding", "").lower():
        body = dechunk(body)
    return status, fields, body, len(data)


def dechunk(data: bytes) -> bytes:
    out = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out, data = out + data[:size], data[size + 2:]
    return out


def scripted_body(size: int) -> str:
    """A JSON document of exactly `size` bytes (ASCII), shaped like an API answer."""
    items, text = [], ""
    for i in range(1000):
        items.append({"id": 1000 + i, "name": f"item-{i}", "score": (i * 37) % 101, "tags": ["bench", "json"],
                      "updated_at": "2026-11-23T00:00:00Z"})
        candidate = json.dumps({"items": items, "pad": ""}, separators=(",", ":"))
        if len(candidate) > size:
            items.pop()
            break
        text = candidate
    if not text:
        text = json.dumps({"items": [], "pad": ""}, separators=(",", ":"))
    pad = size - len(text)
    if pad < 0:
        fail(f"--body-bytes {size} is too small for a JSON document")
    document = json.dumps({"items": items, "pad": "x" * pad}, separators=(",", ":"))
    assert len(document) == size, (len(document), size)
    return document


# MARK: - wrk


UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0, "m": 60000.0}


def parse_wrk(text: str) -> dict:
    def latency(label):
        match = re.search(rf"^\s*{label}%\s+([\d.]+)(us|ms|s|m)\s*$", text, re.M)
        return float(match.group(1)) * UNITS[match.group(2)] if match else float("nan")
    rps = re.search(r"^Requests/sec:\s+([\d.]+)", text, re.M)
    total = re.search(r"^\s*(\d+) requests in ([\d.]+)(us|ms|s|m)", text, re.M)
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if not rps or not total:
        fail(f"could not parse wrk's output:\n{text[-1500:]}")
    errors = int(non2xx.group(1)) if non2xx else 0
    socket_errors = sum(int(g) for g in sock.groups()) if sock else 0
    return {"rps": float(rps.group(1)), "requests": int(total.group(1)), "p50": latency(50), "p99": latency(99),
            "non2xx": errors, "socket_errors": socket_errors}


def wrk_run(wrk: str, url: str, threads: int, connections: int, duration: int, script: Path | None = None) -> dict:
    cmd = [wrk, f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--latency", *(["-s", str(script)] if script else []), url]
    result = run(cmd, timeout=duration + 60, check=False)
    if result.returncode != 0:
        fail(f"wrk exit {result.returncode}: {(result.stderr or result.stdout)[-1000:]}")
    return parse_wrk(result.stdout)


# MARK: - Cases
