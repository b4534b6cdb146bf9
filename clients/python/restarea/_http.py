"""One HTTP request and what it produced, judged the way the Go client
judges it (client/client.go): an answer, a definite error, or a lost answer."""

from __future__ import annotations

import email.utils
import http.client
import json
import socket
import ssl
import time
import urllib.parse
from dataclasses import dataclass
from datetime import timezone
from typing import Any, Optional

from .errors import ApiError

# Caps the answers read: a page of 200 replies of 20,000 characters fits.
MAX_ANSWER_BYTES = 64 << 20

USER_AGENT = "restarea-client-python"


@dataclass
class Answer:
    """What one request produced. lost is set when there is no usable answer
    (connection failure, timeout, a cut or garbled body): the request may or
    may not have had its effect. unreachable is set when no HTTP answer came
    at all, so the next server should be tried."""

    status: int = 0
    data: Any = None
    error: Optional[ApiError] = None
    retry_after: float = 0.0
    lost: str = ""
    unreachable: bool = False


def parse_retry_after(h: Optional[str], now: Optional[float] = None) -> float:
    """Retry-After in seconds: whole seconds or an HTTP date; 0 when absent or unreadable."""
    h = (h or "").strip()
    if not h:
        return 0.0
    if h.isdigit():
        return float(int(h))
    try:
        t = email.utils.parsedate_to_datetime(h)
    except (TypeError, ValueError):
        return 0.0
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    d = t.timestamp() - (time.time() if now is None else now)
    return d if d > 0 else 0.0


def _snippet(b: bytes) -> str:
    s = b.decode("utf-8", errors="replace").strip()
    return s[:120] + "…" if len(s) > 120 else s


def do(
    base: str,
    method: str,
    path: str,
    query: Optional[dict[str, str]],
    body: Optional[bytes],
    timeout: float,
    ssl_context: Optional[ssl.SSLContext],
) -> Answer:
    """Send one request to base and read the whole answer within timeout
    seconds. Redirects are not followed (a POST turned into a GET would lose
    the post while looking like an answer) and no proxy is used."""
    deadline = time.monotonic() + timeout
    u = urllib.parse.urlsplit(base)
    target = (u.path or "") + path
    if query:
        target += "?" + urllib.parse.urlencode(query)
    conn: http.client.HTTPConnection
    if u.scheme == "https":
        conn = http.client.HTTPSConnection(u.hostname or "", u.port, timeout=timeout, context=ssl_context)
    else:
        conn = http.client.HTTPConnection(u.hostname or "", u.port, timeout=timeout)
    headers = {"Accept": "application/json", "User-Agent": USER_AGENT, "Connection": "close"}
    if body is not None:
        headers["Content-Type"] = "application/json; charset=utf-8"
    try:
        try:
            conn.request(method, target, body=body, headers=headers)
            sock = conn.sock
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            return Answer(lost=f"{type(e).__name__}: {e}" if str(e) else type(e).__name__, unreachable=True)
        status = resp.status
        chunks: list[bytes] = []
        size = 0
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise socket.timeout("timed out")
                if sock is not None:
                    try:
                        sock.settimeout(left)
                    except OSError:
                        pass
                chunk = resp.read(65536)
                if not chunk:
                    break
                size += len(chunk)
                if size > MAX_ANSWER_BYTES:
                    return Answer(lost=f"answer {status} larger than {MAX_ANSWER_BYTES} bytes")
                chunks.append(chunk)
        except (OSError, http.client.HTTPException) as e:
            # The status line arrived but the body was cut: the answer is lost all the same.
            return Answer(lost=f"answer {status} cut short: {type(e).__name__}: {e}")
        raw = b"".join(chunks)
        retry_after = parse_retry_after(resp.getheader("Retry-After"))
    finally:
        conn.close()
    try:
        env = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        env = None
    if not isinstance(env, dict):
        env = None
    if 200 <= status < 300:
        if env is None or env.get("data") is None:
            return Answer(lost=f"answer {status} without a readable data member")
        return Answer(status=status, data=env["data"], retry_after=retry_after)
    err = env.get("error") if env is not None else None
    if isinstance(err, dict) and isinstance(err.get("code"), str) and err["code"]:
        msg = err.get("message")
        return Answer(
            status=status,
            error=ApiError(err["code"], msg if isinstance(msg, str) else "", status, retry_after),
            retry_after=retry_after,
        )
    # Not one of ours: a proxy or load balancer answered. Keep the status;
    # the message is the start of what it said.
    return Answer(status=status, error=ApiError("", f"HTTP {status}: {_snippet(raw)}", status, retry_after), retry_after=retry_after)


