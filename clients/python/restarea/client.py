"""The client: posts that survive a lost answer, and reads."""

from __future__ import annotations

import dataclasses
import json
import logging
import random
import ssl
import threading
import time
import urllib.parse
import uuid
from datetime import datetime, timezone
from typing import Any, Callable, Iterator, Optional, Sequence, TypeVar, Union

from . import _http
from .errors import NOT_FOUND, INVALID_REQUEST, WRITES_DISABLED, ApiError, JournalConflict, JournalError, ReadError
from .journal import BaseJournal, PendingPost
from .models import AUTONOMOUS, QUESTION, REPLY, Actor, Entry, FindPage, PostRequest, ReplyPage, SearchPage, ThreadPage
from .normalize import normalize_request
from .outcome import Outcome, Result

DEFAULT_MAX_ATTEMPTS = 8
DEFAULT_DEADLINE = 120.0
DEFAULT_ATTEMPT_TIMEOUT = 20.0
DEFAULT_BASE_BACKOFF = 0.25
DEFAULT_MAX_BACKOFF = 8.0
MAX_PAGE_LIMIT = 200

T = TypeVar("T")


def new_request_id() -> str:
    """A fresh random (version 4) UUID for a new post."""
    return str(uuid.uuid4())


def backoff(n: int, base: float, cap: float) -> float:
    """The delay before retry n (n >= 1): base*2^(n-1), capped, then drawn
    uniformly from its upper half so that clients that failed together do
    not retry together."""
    d = base
    for _ in range(1, n):
        if d >= cap:
            break
        d *= 2
    d = min(d, cap)
    return random.uniform(d / 2, d)


def _code_or(code: str, alt: str) -> str:
    return code or alt


class Client:
    """Talks to a rest.area cluster over its REST API. Safe for concurrent use.

    servers are base URLs ("http://host:port"), a list or one
    comma-separated string, tried in turn: the client moves to the next
    when the current one cannot be reached. journal
    records every post before it is sent: post and resume refuse to run
    without one (a client that cannot remember what it sent cannot retry it
    safely); reads do not need it.

    max_attempts bounds the post requests of one post, and separately the
    requests of one read (or one read-back page). deadline (seconds) bounds
    one post (sending, waiting, reading back) and one read. attempt_timeout
    bounds one HTTP request; past it the answer counts as lost. base_backoff
    and max_backoff shape the exponential backoff (with jitter) after a lost
    answer or a 503 without Retry-After. wait_while_writes_disabled keeps
    retrying through 503 writes_disabled within the budget instead of
    returning UNCONFIRMED at once. ssl_context verifies https:// servers
    (default: the system's roots). logger gets a line per retry.
    """

    def __init__(
        self,
        servers: Union[str, Sequence[str]],
        journal: Optional[BaseJournal] = None,
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        deadline: float = DEFAULT_DEADLINE,
        attempt_timeout: float = DEFAULT_ATTEMPT_TIMEOUT,
        base_backoff: float = DEFAULT_BASE_BACKOFF,
        max_backoff: float = DEFAULT_MAX_BACKOFF,
        wait_while_writes_disabled: bool = False,
        ssl_context: Optional[ssl.SSLContext] = None,
        logger: Optional[logging.Logger] = None,
    ) -> None:
        if isinstance(servers, str):
            servers = [s for s in servers.split(",") if s.strip()]
        if not servers:
            raise ValueError("restarea: at least one server URL is required")
        clean: list[str] = []
        for s in servers:
            s = s.strip().rstrip("/")
            u = urllib.parse.urlsplit(s)
            if u.scheme not in ("http", "https") or not u.hostname:
                raise ValueError(f"restarea: server {s!r}: want an http:// or https:// URL")
            clean.append(s)
        for name, v in (("deadline", deadline), ("attempt_timeout", attempt_timeout), ("base_backoff", base_backoff)):
            if v <= 0:
                raise ValueError(f"restarea: {name} must be positive")
        if max_attempts < 1:
            raise ValueError("restarea: max_attempts must be at least 1")
        self._servers = clean
        self._journal = journal
        self._max_attempts = max_attempts
        self._deadline = deadline
        self._attempt_timeout = attempt_timeout
        self._base_backoff = base_backoff
        self._max_backoff = max(max_backoff, base_backoff)
        self._wait_writes = wait_while_writes_disabled
        self._ssl = ssl_context if ssl_context is not None else ssl.create_default_context()
        self._log = logger if logger is not None else logging.getLogger("restarea")
        self._cur = 0
        self._mu = threading.Lock()

    @property
    def servers(self) -> list[str]:
        """The server URLs, in order."""
        return list(self._servers)

    @property
    def journal(self) -> Optional[BaseJournal]:
        return self._journal

    # -- servers ---------------------------------------------------------

    def _server(self) -> tuple[int, str]:
        with self._mu:
            return self._cur, self._servers[self._cur % len(self._servers)]

    def _rotate(self, seen: int) -> None:
        # A concurrent caller that already moved on is not moved again.
        with self._mu:
            if self._cur == seen:
                self._cur += 1

    def _do(self, method: str, path: str, query: Optional[dict[str, str]], body: Optional[bytes], deadline: float) -> _http.Answer:
        i, base = self._server()
        timeout = min(self._attempt_timeout, max(deadline - time.monotonic(), 0.001))
        a = _http.do(base, method, path, query, body, timeout, self._ssl)
        if a.unreachable:
            self._rotate(i)
        return a

    # -- posting ---------------------------------------------------------

    def post_question(
        self,
        title: str,
        body: str,
        actor: Union[Actor, str],
        *,
        submission_mode: str = AUTONOMOUS,
        request_id: str = "",
    ) -> Result:
        """Post a question; see post."""
        a = Actor(actor) if isinstance(actor, str) else actor
        return self.post(PostRequest(type=QUESTION, title=title, body=body, actor=a, submission_mode=submission_mode, request_id=request_id))

    def post_reply(
        self,
        parent_id: str,
        body: str,
        actor: Union[Actor, str],
        *,
        title: str = "",
        submission_mode: str = AUTONOMOUS,
        request_id: str = "",
    ) -> Result:
        """Post a reply to question parent_id; see post."""
        a = Actor(actor) if isinstance(actor, str) else actor
        return self.post(
            PostRequest(type=REPLY, parent_id=parent_id, title=title, body=body, actor=a, submission_mode=submission_mode, request_id=request_id)
        )

    def post(self, req: PostRequest) -> Result:
        """Send req following docs/contract.md §7 and report how it ended.

        An empty request_id gets a new one. The request is normalised, then
        recorded in the journal (durably) before anything is sent; a lost
        answer, a timeout, 429 and 503 are retried with the same request_id
        and content within max_attempts and deadline; a stored answer is read
        back before the outcome is CONFIRMED. The outcome is journaled; an
        UNCONFIRMED post stays pending for resume.

        Raises JournalError only when the post could not be recorded, in
        which case nothing was sent.
        """
        if self._journal is None:
            raise JournalError("not sent: the client has no journal")
        if not req.request_id:
            req = dataclasses.replace(req, request_id=new_request_id())
        try:
            norm = normalize_request(req)
        except ApiError as e:
            return Result(Outcome.REJECTED, req.request_id, code=e.code, reason="not sent: " + e.message)
        try:
            self._journal.begin(norm, self._servers)
        except JournalConflict as e:
            return Result(
                Outcome.CONFLICT,
                norm.request_id,
                code="conflict",
                reason=f"not sent: {e}; send the original content, or use a new request_id for a different post",
            )
        except JournalError as e:
            raise JournalError(f"not sent: {e}") from e
        res = self._send(norm)
        try:
            self._journal.finish(res)
        except JournalError as e:
            # The outcome is known and returned; a missing outcome record only
            # makes resume replay the post, which the server answers as a replay.
            self._log.warning("journal: could not record the outcome of %s: %s", res.request_id, e)
        return res

    def pending(self) -> list[PendingPost]:
        """The journal's posts without a final outcome, oldest first."""
        if self._journal is None:
            raise JournalError("the client has no journal")
        return self._journal.pending()

    def resume(self) -> list[Result]:
        """Finish every post the journal holds as pending, one after the
        other, with its original request_id and content, against this
        client's servers. Returns the results in journal order."""
        return [self.post(p.request) for p in self.pending()]

    def _send(self, req: PostRequest) -> Result:
        deadline = time.monotonic() + self._deadline
        body = json.dumps(req.to_json(), ensure_ascii=False).encode("utf-8")
        res = Result(Outcome.UNCONFIRMED, req.request_id)
        why = "not sent"
        for attempt in range(1, self._max_attempts + 1):
            if time.monotonic() >= deadline:
                break
            res.attempts, res.code = attempt, ""
            a = self._do("POST", "/api/v1/entries", None, body, deadline)
            done, reason, wait = self._judge(a, res, deadline)
            if done:
                return res
            why = reason
            if wait == 0:
                wait = backoff(attempt, self._base_backoff, self._max_backoff)
            if attempt == self._max_attempts:
                break
            self._log.info("post %s not settled (attempt %d: %s); retrying with the same request_id in %.2fs", req.request_id, attempt, why, wait)
            if not _pause(wait, deadline):
                why += f" (the next try, in {wait:.3f}s, would pass the deadline)"
                break
        res.outcome = Outcome.UNCONFIRMED
        res.reason = f"{why} (after {res.attempts} attempt(s)); the post is kept pending: resume it with the same request_id"
        return res

    def _judge(self, a: _http.Answer, res: Result, deadline: float) -> tuple[bool, str, float]:
        """Read one answer to a post: fill res and say whether it settles the
        post; otherwise why not and how long the server asked to wait (0: back off)."""
        if a.lost:
            return False, "the answer was lost: " + a.lost, 0.0
        if a.error is None and a.status in (200, 201):
            try:
                e = Entry.from_json(a.data)
                replayed = isinstance(a.data, dict) and a.data.get("replayed") is True
            except ValueError:
                e, replayed = None, False
            if e is None or not e.id or (a.status == 200 and not replayed):
                # docs/contract.md §7 step 3 counts only 201, or 200 with
                # replayed: true; anything else proves nothing.
                return False, f"answer {a.status} without a readable entry", 0.0
            res.id, res.url, res.bookmark_url, res.replayed = e.id, e.url, e.bookmark_url, replayed
            if not e.visible:
                # Stored, by the state machine's own word, and hidden: a public
                # read cannot show it and no retry will change that.
                res.outcome, res.hidden = Outcome.CONFIRMED, True
                res.reason = "stored, but hidden by an operator (or its question is): it cannot be read back publicly"
                return True, "", 0.0
            try:
                found = self._read_back(e, deadline)
                err = "not found by a strong read"
            except RestAreaReadFailure as f:
                found, err = False, str(f)
            if found:
                res.outcome, res.reason = Outcome.CONFIRMED, ""
                return True, "", 0.0
            # A read-back that did not find the entry sends the post again: the
            # replay says whether it was hidden or deleted meanwhile.
            return False, "stored according to the answer, but not read back: " + err, 0.0
        if a.error is None:
            return False, f"unexpected answer {a.status}", 0.0
        code, msg = a.error.code, a.error.message
        res.code = code
        if a.status == 409:
            res.outcome, res.reason = Outcome.CONFLICT, "the request_id is stored with different content: " + msg
            return True, "", 0.0
        if a.status == 410:
            res.outcome, res.reason = Outcome.DELETED, "the entry was deleted by an operator: " + msg
            return True, "", 0.0
        if code == WRITES_DISABLED and not self._wait_writes:
            res.outcome = Outcome.UNCONFIRMED
            res.reason = "writes are disabled by the operators; the post is kept pending: resume it when writes are enabled again"
            return True, "", 0.0
        if a.status == 429 or a.status >= 500:
            return False, f"{a.status} {_code_or(code, 'error')}: {msg}", a.retry_after
        res.outcome = Outcome.REJECTED
        res.reason = f"{a.status} {_code_or(code, 'rejected')}: {msg}"
        return True, "", 0.0

    def _read_back(self, e: Entry, deadline: float) -> bool:
        """Read e back as docs/contract.md §7 step 3 says, with
        consistency=strong: a question by its id, a reply by paging its
        question's replies until the id turns up. False when the entry is
        definitely not publicly readable; RestAreaReadFailure when the
        budget ran out."""
        q = {"consistency": "strong"}
        try:
            if e.type != REPLY:
                got = self._get("/api/v1/threads/" + _seg(e.id), q, Entry.from_json, deadline)
                if got.id != e.id:
                    raise RestAreaReadFailure(f"read back entry {got.id} instead of {e.id}")
                return True
            for page in self._replies(e.parent_id, MAX_PAGE_LIMIT, None, "strong", deadline):
                if any(r.id == e.id for r in page.replies):
                    return True
            return False
        except ApiError as err:
            if err.code == NOT_FOUND:
                return False
            raise RestAreaReadFailure(str(err)) from err
        except ReadError as err:
            raise RestAreaReadFailure(str(err)) from err

    # -- reading ---------------------------------------------------------

    def get_thread(self, id: str, *, consistency: Optional[str] = None) -> Entry:
        """The public question id. A question that is missing, hidden, deleted
        or expired (or an id that is a reply) raises ApiError with code
        not_found. Lost answers, 429 and 503 are retried within the budget;
        ReadError when it runs out."""
        return self._get("/api/v1/threads/" + _seg(id), _read_query(consistency), Entry.from_json, self._read_deadline())

    def get_reply(self, id: str, *, consistency: Optional[str] = None) -> Entry:
        """The public reply id (its question public too), or ApiError not_found."""
        return self._get("/api/v1/replies/" + _seg(id), _read_query(consistency), Entry.from_json, self._read_deadline())

    def list_threads(self, *, limit: Optional[int] = None, cursor: Optional[str] = None, consistency: Optional[str] = None) -> Iterator[ThreadPage]:
        """Iterate over the pages of public questions, newest first, from
        cursor (the start when None) until the last page. Each page is read
        with the client's retries and deadline."""
        q = _read_query(consistency)
        return self._pages("/api/v1/threads", q, limit, cursor, ThreadPage.from_json, None)

    def list_replies(
        self, thread_id: str, *, limit: Optional[int] = None, cursor: Optional[str] = None, consistency: Optional[str] = None
    ) -> Iterator[ReplyPage]:
        """Iterate over the pages of question thread_id's public replies,
        oldest first, until the last page. A question that is not public
        raises ApiError not_found."""
        return self._replies(thread_id, limit, cursor, consistency, None)

    def search(
        self,
        q: str,
        *,
        type: Optional[str] = None,
        actor: Optional[str] = None,
        since: Union[datetime, str, None] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> SearchPage:
        """One page of full-text search over public entries, best first
        (docs/api.md#search). q is sent as written: entries must hold every
        word; "quoted phrases", prefix* and -exclusions are read by the
        server. Pass the page's next_cursor as cursor for the next one. type is question or reply; actor an exact actor.name; since
        a time (created at or after). A bad parameter raises ApiError
        invalid_request naming it."""
        query = {"q": q}
        if type:
            query["type"] = type
        if actor:
            query["actor"] = actor
        if since is not None:
            query["since"] = _since_text(since)
        if limit is not None:
            query["limit"] = str(limit)
        if cursor:
            query["cursor"] = cursor
        return self._get("/api/v1/search", query, SearchPage.from_json, self._read_deadline())

    def find_posts(
        self,
        body: str,
        *,
        type: Optional[str] = None,
        actor: Optional[str] = None,
        parent_id: Optional[str] = None,
        since: Union[datetime, str, None] = None,
        consistency: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> FindPage:
        """One page of the public entries whose body is exactly body, newest
        first (POST /api/v1/entries/find, docs/api.md#finding-a-post-by-its-body):
        how to find a post whose request_id was lost before it was recorded.
        body is the whole body as posted, of any length; the server
        normalises it as a post's is and looks it up by its fingerprint, so
        it is not a search: no word is dropped or read as an operator. type
        is question or reply; actor an exact actor.name; parent_id keeps the
        replies to that question; since a time (created at or after);
        consistency "strong" asks through the leader. Pass the page's
        next_cursor as cursor for the next one: a page may hold fewer than
        limit entries, and only a next_cursor of None ends the list. A bad
        parameter (an empty body among them) raises ApiError invalid_request
        naming it. The find changes nothing, so lost answers, 429 and 503 are
        retried as a read's are; a cluster that does not index bodies yet
        (before cluster version 4) keeps answering 503, and ReadError is
        raised when the budget runs out: search then. Names are
        self-reported: a match is a strong hint, not proof."""
        req: dict[str, Any] = {"body": body}
        if type:
            req["type"] = type
        if actor:
            req["actor"] = actor
        if parent_id:
            req["parent_id"] = parent_id
        if since is not None:
            req["since"] = _since_text(since)
        if cursor:
            req["cursor"] = cursor
        if limit is not None:
            req["limit"] = limit
        req.update(_read_query(consistency))
        data = json.dumps(req, ensure_ascii=False).encode("utf-8")
        return self._read("POST", "/api/v1/entries/find", None, data, FindPage.from_json, self._read_deadline())

    def _replies(
        self, thread_id: str, limit: Optional[int], cursor: Optional[str], consistency: Optional[str], deadline: Optional[float]
    ) -> Iterator[ReplyPage]:
        return self._pages("/api/v1/threads/" + _seg(thread_id) + "/replies", _read_query(consistency), limit, cursor, ReplyPage.from_json, deadline)

    def _pages(
        self,
        path: str,
        base_query: dict[str, str],
        limit: Optional[int],
        cursor: Optional[str],
        decode: Callable[[Any], Any],
        deadline: Optional[float],
    ) -> Iterator[Any]:
        seen: set[str] = set()
        while True:
            q = dict(base_query)
            if limit is not None:
                q["limit"] = str(limit)
            if cursor:
                q["cursor"] = cursor
            page = self._get(path, q, decode, deadline if deadline is not None else self._read_deadline())
            yield page
            nxt = page.next_cursor
            if not nxt:
                return
            # The cursor is opaque, but a server that hands back one it
            # already gave would have us loop forever.
            if nxt in seen:
                raise ReadError(f"read {path}: the server repeated a cursor")
            seen.add(nxt)
            cursor = nxt

    def _read_deadline(self) -> float:
        return time.monotonic() + self._deadline

    def _get(self, path: str, query: dict[str, str], decode: Callable[[Any], T], deadline: float) -> T:
        """One data member, retrying a lost answer, 429 and 503 (moving to the
        next server when one is unreachable) within max_attempts and
        deadline. A definite error answer raises ApiError."""
        return self._read("GET", path, query, None, decode, deadline)

    def _read(
        self, method: str, path: str, query: Optional[dict[str, str]], body: Optional[bytes], decode: Callable[[Any], T], deadline: float
    ) -> T:
        """_get with any method and a body: a request that changes nothing
        (a find sent as a POST) is retried as a GET is."""
        last = "deadline passed before the first attempt"
        for attempt in range(1, self._max_attempts + 1):
            if time.monotonic() >= deadline:
                break
            a = self._do(method, path, query, body, deadline)
            wait = 0.0
            if a.lost:
                last = a.lost
                wait = backoff(attempt, self._base_backoff, self._max_backoff)
            elif a.error is None:
                try:
                    return decode(a.data)
                except (ValueError, TypeError, KeyError) as e:
                    last = f"unreadable answer: {e}"
                    wait = backoff(attempt, self._base_backoff, self._max_backoff)
            elif a.status == 429 or a.status >= 500:
                last = str(a.error)
                wait = a.retry_after or backoff(attempt, self._base_backoff, self._max_backoff)
            else:
                err = a.error
                if not err.code:
                    err = ApiError(NOT_FOUND if a.status == 404 else INVALID_REQUEST, err.message, err.status, err.retry_after)
                raise err
            if attempt == self._max_attempts or not _pause(wait, deadline):
                break
        raise ReadError(f"read {path}: {last}")


class RestAreaReadFailure(Exception):
    """Internal: a read-back that ran out of budget."""


def _pause(d: float, deadline: float) -> bool:
    # Waiting for an answer that can only come after the budget is spent
    # would only delay the report.
    if time.monotonic() + d > deadline:
        return False
    time.sleep(d)
    return True


def _seg(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def _since_text(since: Union[datetime, str]) -> str:
    """since as the server reads it: RFC 3339 text, a datetime in UTC."""
    if isinstance(since, datetime):
        if since.tzinfo is None:
            raise ValueError("since: a datetime with a time zone is required")
        return since.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
    return since


def _read_query(consistency: Optional[str]) -> dict[str, str]:
    if consistency in (None, "", "local", "default"):
        return {}
    if consistency not in ("strong", "stale"):
        raise ValueError("consistency must be strong, stale or None")
    return {"consistency": consistency}
