"""Test support: a real rest.area node started from the binary, and a
fault-injecting HTTP proxy in front of it. Imported first by every test
module; it puts the package (clients/python) on sys.path."""

from __future__ import annotations

import atexit
import http.client
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Callable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))

# The operator's token of every node the tests start.
ADMIN_TOKEN = "clients-test-admin-token-0123456789"

# Bounds on waiting for a condition; generous for a machine whose cores are busy.
START_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0

_bin_lock = threading.Lock()
_bin_path: Optional[str] = None


def binary() -> str:
    """The restarea binary: $RESTAREA_BIN, or built once from the repository
    into a temporary directory removed when the tests end."""
    global _bin_path
    with _bin_lock:
        if _bin_path is not None:
            return _bin_path
        env = os.environ.get("RESTAREA_BIN", "")
        if env:
            if not os.access(env, os.X_OK):
                raise RuntimeError(f"RESTAREA_BIN={env} is not an executable file")
            _bin_path = env
            return env
        d = tempfile.mkdtemp(prefix="restarea-pytest-bin-")
        atexit.register(shutil.rmtree, d, True)
        out = os.path.join(d, "restarea")
        subprocess.run(["go", "build", "-o", out, "./cmd/restarea"], cwd=REPO, check=True, timeout=900)
        _bin_path = out
        return out


def wait_for(what: str, timeout: float, cond: Callable[[], object]) -> object:
    """Poll cond until it returns a true value, failing after timeout seconds."""
    end = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            v = cond()
            if v:
                return v
        except Exception as e:  # noqa: BLE001 - reported if the wait fails
            last = e
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")
        time.sleep(0.05)


def closed_url() -> str:
    """An http:// URL on a loopback port that was free a moment ago: connections are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


class Node:
    """One restarea serve process with its own data directory, on free
    loopback ports. stop and start again keep the data (the port changes)."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="restarea-pytest-node-")
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.url = ""
        self._runs = 0

    def start(self) -> "Node":
        self._runs += 1
        log_path = os.path.join(self.dir, f"node-{self._runs}.log")
        log = open(log_path, "wb")
        args = [
            binary(), "serve",
            "--data-dir", os.path.join(self.dir, "data"),
            "--http-addr", "127.0.0.1:0",
            "--raft-addr", "127.0.0.1:0",
            "--log-level", "info",  # the "serving" line, which names the address, is at info
            # The tests post and search more than a person would.
            "--rate-per-source", "100000/m",
            "--search-rate-per-source", "100000/m",
            "--admin-token", ADMIN_TOKEN,
        ]  # fmt: skip
        self.proc = subprocess.Popen(args, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()

        def serving() -> str:
            with open(log_path, "rb") as f:
                for line in f:
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(rec, dict) and rec.get("msg") == "serving" and isinstance(rec.get("url"), str):
                        return rec["url"]
            if self.proc is not None and self.proc.poll() is not None:
                with open(log_path, "rb") as f:
                    raise AssertionError(f"restarea serve exited {self.proc.returncode}: {f.read()[-2000:]!r}")
            return ""

        self.url = str(wait_for("the node's address", START_TIMEOUT, serving))
        wait_for("/readyz", START_TIMEOUT, lambda: http_status(self.url + "/readyz") == 200)
        return self

    def stop(self) -> None:
        p, self.proc = self.proc, None
        if p is None or p.poll() is not None:
            return
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=STOP_TIMEOUT)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


    def admin(self, method: str, path: str, body: Optional[dict[str, object]] = None) -> int:
        """Send an operator's request to the admin API; return its status."""
        m = re.match(r"http://([^/:]+):(\d+)", self.url)
        assert m, self.url
        c = http.client.HTTPConnection(m.group(1), int(m.group(2)), timeout=60)
        try:
            data = json.dumps(body).encode() if body is not None else None
            c.request(method, "/api/v1/admin" + path, body=data, headers={"Authorization": "Bearer " + ADMIN_TOKEN})
            r = c.getresponse()
            r.read()
            return r.status
        finally:
            c.close()


    def finalize_upgrade(self) -> None:
        """Raise the cluster to the newest cluster version every member knows
        (POST /api/v1/admin/cluster/finalize-upgrade; harmless when it already
        runs it), which finding a post by its body needs."""
        wait_for("finalize-upgrade answered 200", START_TIMEOUT, lambda: self.admin("POST", "/cluster/finalize-upgrade") == 200)


def http_status(url: str) -> int:
    m = re.match(r"http://([^/:]+):(\d+)(/.*)", url)
    assert m, url
    c = http.client.HTTPConnection(m.group(1), int(m.group(2)), timeout=10)
    try:
        c.request("GET", m.group(3))
        r = c.getresponse()
        r.read()
        return r.status
    finally:
        c.close()


# Faults the proxy injects, one per request, in order.
DROP = "drop"  # forward, then close the connection without answering: the answer is lost
TOO_MANY = "429"  # answer 429 rate_limited with Retry-After: 1, without forwarding
UNAVAILABLE = "503"  # answer 503 unavailable without Retry-After, without forwarding


class FaultProxy:
    """An HTTP proxy on a loopback port that forwards to upstream, injecting
    the scripted faults into POSTs (script_posts) in order; with drop_all
    every POST's answer is dropped after forwarding. seen lists what each
    POST met ("forwarded", or the fault)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.drop_all = False
        self.seen: list[str] = []
        self._faults: list[str] = []
        self._mu = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._forward(None)

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                fault = proxy._next_post_fault()
                with proxy._mu:
                    proxy.seen.append(fault or "forwarded")
                if fault == TOO_MANY:
                    self._answer(429, b'{"error":{"code":"rate_limited","message":"injected"}}', {"Retry-After": "1"})
                elif fault == UNAVAILABLE:
                    self._answer(503, b'{"error":{"code":"unavailable","message":"injected"}}', {})
                else:
                    self._forward(body, drop=(fault == DROP))

            def _answer(self, status: int, body: bytes, extra: dict[str, str]) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                for k, v in extra.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def _forward(self, body: Optional[bytes], drop: bool = False) -> None:
                m = re.match(r"http://([^/:]+):(\d+)", proxy.upstream)
                assert m
                c = http.client.HTTPConnection(m.group(1), int(m.group(2)), timeout=30)
                try:
                    headers = {"Content-Type": "application/json"} if body is not None else {}
                    c.request(self.command, self.path, body=body, headers=headers)
                    r = c.getresponse()
                    data = r.read()
                except OSError:
                    self.close_connection = True
                    return
                finally:
                    c.close()
                if drop:
                    # The post reached the node; its answer never reaches the client.
                    self.close_connection = True
                    return
                extra = {"Retry-After": r.getheader("Retry-After") or ""}
                self._answer(r.status, data, {k: v for k, v in extra.items() if v})

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def script_posts(self, *faults: str) -> None:
        with self._mu:
            self._faults = list(faults)

    def _next_post_fault(self) -> str:
        with self._mu:
            if self._faults:
                return self._faults.pop(0)
            return DROP if self.drop_all else ""

    def posts_seen(self) -> list[str]:
        with self._mu:
            return list(self.seen)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=STOP_TIMEOUT)
