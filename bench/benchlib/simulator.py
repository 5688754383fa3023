"""freshet-sim, the origin every benchmark runs against, and a byte-counting relay in front of it."""
from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request
from pathlib import Path

from .common import OPENER
from .processes import Child


class Simulator:
    """`freshet-sim --port 0 --no-rate-limits` on 127.0.0.1 (stdout and stderr to sim.out and sim.err
    in `work`), in its own process group, stopped by its id."""

    def __init__(self, binary: Path, work: Path):
        self.child = Child("freshet-sim", [binary, "--host", "127.0.0.1", "--port", "0", "--no-rate-limits"],
                           stdout=work / "sim.out", stderr=work / "sim.err")
        self.pid = self.child.pid
        self.url = self.child.wait_for_line(r"listening on (http://127\.0\.0\.1:\d+)").group(1)
        self.port = int(self.url.rsplit(":", 1)[1])

    def request(self, method: str, path: str, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"} if data else {})
        with OPENER.open(request, timeout=30) as response:
            return json.loads(response.read() or b"null")

    def latency(self, route: str, ms: int) -> None:
        self.request("POST", "/_sim/latency", {"route": route, "ms": ms})

    def reset_log(self) -> None:
        self.request("DELETE", "/_sim/log")

    def log_entries(self) -> list:
        return self.request("GET", "/_sim/log")

    def request_count(self) -> int:
        return self.request("GET", "/_sim/stats")["requests"]

    def stop(self) -> None:
        self.child.stop()


class CountingRelay:
    """A TCP relay on 127.0.0.1 in front of the simulator that counts the bytes each way, so
    "bytes received" includes status lines and headers (the simulator's log counts body bytes).
    Threads, bounded: each socket times out after 60 s of silence; stopped at the end of the case."""

    def __init__(self, target: str):
        host, port = target.removeprefix("http://").split(":")
        self.target = (host, int(port))
        self.lock = threading.Lock()
        self.received = 0  # simulator → client
        self.sent = 0      # client → simulator
        self.stopped = False
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.server.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stopped:
            try:
                client, _ = self.server.accept()
            except (socket.timeout, OSError):
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            for sock in (client, upstream):
                sock.settimeout(60)
            threading.Thread(target=self._pump, args=(client, upstream, "sent"), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, "received"), daemon=True).start()

    def _pump(self, source: socket.socket, destination: socket.socket, direction: str) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                destination.sendall(data)
                with self.lock:
                    setattr(self, direction, getattr(self, direction) + len(data))
        except OSError:
            pass
        finally:
            for sock, how in ((destination, socket.SHUT_WR), (source, socket.SHUT_RD)):
                try:
                    sock.shutdown(how)
                except OSError:
                    pass

    def take(self) -> tuple[int, int]:
        """(sent, received) since the last call."""
        time.sleep(0.05)  # let the pumps account for the last bytes the client already read
        with self.lock:
            counts = (self.sent, self.received)
            self.sent = self.received = 0
        return counts

    def stop(self) -> None:
        self.stopped = True
        self.thread.join(timeout=5)
        self.server.close()
