"""The journal: every post recorded before it is sent, and its outcome
after, so that a post whose answer was lost is retried with the same
request_id and content, even by another process after a crash.

The file format is the Go client's (client/journal.go), one JSON object a
line, so restarea post --resume finishes what this client left pending and
the other way round. Both lock PATH.lock with flock while they read or append.
"""

from __future__ import annotations

import abc
import json
import os
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Iterator, Optional, Sequence, TypeVar, Union

from .errors import JournalConflict, JournalError
from .models import PostRequest
from .outcome import Result

try:
    import fcntl
except ImportError:  # not Unix: this process's lock only
    fcntl = None  # type: ignore[assignment]

KIND_PENDING = "pending"
"""Written before a post is sent: the normalised request and its servers."""
KIND_OUTCOME = "outcome"
"""Written when Client.post returns: the Result."""

JOURNAL_VERSION = 1

T = TypeVar("T")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Record:
    """One line of the journal."""

    kind: str
    request_id: str
    time: str = ""
    servers: tuple[str, ...] = ()
    request: Optional[PostRequest] = None
    result: Optional[Result] = None
    v: int = JOURNAL_VERSION

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"v": self.v, "kind": self.kind, "request_id": self.request_id, "time": self.time}
        if self.servers:
            d["servers"] = list(self.servers)
        if self.request is not None:
            d["request"] = self.request.to_json()
        if self.result is not None:
            d["result"] = self.result.to_json()
        return d

    @classmethod
    def from_json(cls, d: Any) -> "Record":
        if not isinstance(d, dict):
            raise ValueError("not an object")
        rid = d.get("request_id")
        if not isinstance(rid, str) or not rid:
            raise ValueError("no request_id")
        servers = d.get("servers") or []
        if not isinstance(servers, list) or not all(isinstance(s, str) for s in servers):
            raise ValueError("servers is not a list of strings")
        req = d.get("request")
        res = d.get("result")
        return cls(
            v=d.get("v") if isinstance(d.get("v"), int) else 0,
            kind=d.get("kind") if isinstance(d.get("kind"), str) else "",
            request_id=rid,
            time=d.get("time") if isinstance(d.get("time"), str) else "",
            servers=tuple(servers),
            request=PostRequest.from_json(req) if req is not None else None,
            result=Result.from_json(res) if isinstance(res, dict) else None,
        )


@dataclass(frozen=True)
class PendingPost:
    """A post the journal holds as not finished.

    request is the normalised request exactly as first sent; servers are the
    ones it was last sent to; since is when it was first recorded; reason is
    why the last attempt left it unconfirmed ("" when the process ended
    before the post returned).
    """

    request: PostRequest
    servers: tuple[str, ...]
    since: str
    reason: str


def pending_of(records: Sequence[Record]) -> list[PendingPost]:
    """The posts whose last record is a pending record or an unconfirmed
    outcome, in the order they were first recorded."""
    order: list[str] = []
    posts: dict[str, dict[str, Any]] = {}
    open_: dict[str, bool] = {}
    for r in records:
        if r.kind == KIND_PENDING:
            if r.request is None:
                continue
            p = posts.get(r.request_id)
            if p is None:
                p = {"request": r.request, "since": r.time}
                posts[r.request_id] = p
                order.append(r.request_id)
            p["servers"], p["reason"] = r.servers, ""
            open_[r.request_id] = True
        elif r.kind == KIND_OUTCOME:
            p = posts.get(r.request_id)
            if p is not None and r.result is not None:
                open_[r.request_id] = not r.result.outcome.final
                p["reason"] = r.result.reason
    return [
        PendingPost(request=posts[i]["request"], servers=posts[i]["servers"], since=posts[i]["since"], reason=posts[i]["reason"])
        for i in order
        if open_.get(i)
    ]


class BaseJournal(abc.ABC):
    """What Client needs of a journal. begin must be durable before it returns."""

    def begin(self, req: PostRequest, servers: Sequence[str]) -> None:
        """Record req (normalised) as pending, to be sent to servers. Raises
        JournalConflict, recording nothing, when the journal holds the
        request_id with different content."""

        def run(recs: list[Record]) -> Record:
            for r in recs:
                if (
                    r.kind == KIND_PENDING
                    and r.request_id == req.request_id
                    and r.request is not None
                    and r.request.content() != req.content()
                ):
                    raise JournalConflict()
            return Record(kind=KIND_PENDING, request_id=req.request_id, time=_now(), servers=tuple(servers), request=req)

        self._append_after(run)

    def finish(self, res: Result) -> None:
        """Record the outcome of a post."""
        self._append_after(lambda _recs: Record(kind=KIND_OUTCOME, request_id=res.request_id, time=_now(), result=res))

    def pending(self) -> list[PendingPost]:
        """The posts without a final outcome, in the order first recorded."""
        return pending_of(self.records())

    @abc.abstractmethod
    def records(self) -> list[Record]:
        """Every readable record, in order."""

    @abc.abstractmethod
    def _append_after(self, make: Callable[[list[Record]], Record]) -> None:
        """Under the journal's lock: read the records, call make with them,
        and append (durably) the record it returns."""


class MemoryJournal(BaseJournal):
    """A journal held in this process's memory. It makes retries within the
    process safe, but a post pending when the process ends is forgotten:
    use Journal (a file) when a post must survive a crash."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[Record] = []

    def records(self) -> list[Record]:
        with self._lock:
            return list(self._records)

    def _append_after(self, make: Callable[[list[Record]], Record]) -> None:
        with self._lock:
            self._records.append(make(list(self._records)))


def default_journal_path() -> str:
    """$XDG_STATE_HOME/restarea/journal.jsonl, or ~/.local/state/restarea/journal.jsonl:
    the Go client's and restarea post's default."""
    d = os.environ.get("XDG_STATE_HOME", "")
    if d and os.path.isabs(d):
        return os.path.join(d, "restarea", "journal.jsonl")
    home = os.path.expanduser("~")
    if home == "~":
        raise JournalError("journal: no home directory for the default path")
    return os.path.join(home, ".local", "state", "restarea", "journal.jsonl")


def _sync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        raise JournalError(f"journal dir: {e}") from e
    try:
        os.fsync(fd)
    except OSError as e:
        raise JournalError(f"journal dir fsync: {e}") from e
    finally:
        os.close(fd)


class Journal(BaseJournal):
    """An append-only file of JSON lines. Every append is fsynced before it
    returns (and a newly created file's directory too); appends from several
    threads and processes are serialised by an exclusive flock on PATH.lock,
    so records never interleave. Safe for concurrent use.

    path "" or None means default_journal_path(). The directory is created
    (0700) and the file (0600) if needed.
    """

    def __init__(self, path: Union[str, "os.PathLike[str]", None] = None) -> None:
        p = os.fspath(path) if path else default_journal_path()
        self._path = os.path.abspath(p)
        self._mu = threading.Lock()
        d = os.path.dirname(self._path)
        existed = os.path.isdir(d)
        try:
            os.makedirs(d, mode=0o700, exist_ok=True)
        except OSError as e:
            raise JournalError(f"journal: {e}") from e
        if not existed:
            # A new directory's own entry must be durable, or the journal
            # inside it could vanish with it after a crash.
            _sync_dir(os.path.dirname(d))

        def touch() -> None:
            fd, created = self._open_append()
            self._close_synced(fd, created)

        self._locked(touch)

    @property
    def path(self) -> str:
        """The journal file's path."""
        return self._path

    def records(self) -> list[Record]:
        """Every readable record in file order. A line that cannot be parsed
        (the torn end of an append cut by a crash) is skipped."""
        return self._locked(self._read)

    def compact(self) -> int:
        """Rewrite the journal keeping only the records of posts still
        pending; return how many records were dropped. The new file replaces
        the old by an atomic rename, fsynced with its directory."""

        def run() -> int:
            recs = self._read()
            keep = {p.request.request_id for p in pending_of(recs)}
            lines = [json.dumps(r.to_json(), ensure_ascii=False) + "\n" for r in recs if r.request_id in keep]
            dropped = len(recs) - len(lines)
            if dropped == 0:
                return 0
            tmp = self._path + ".tmp"
            try:
                fd = os.open(tmp, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
                try:
                    _write_all(fd, "".join(lines).encode("utf-8"))
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(tmp, self._path)
            except OSError as e:
                raise JournalError(f"journal compact: {e}") from e
            _sync_dir(os.path.dirname(self._path))
            return dropped

        return self._locked(run)

    def _append_after(self, make: Callable[[list[Record]], Record]) -> None:
        self._locked(lambda: self._append(make(self._read())))

    def _locked(self, fn: Callable[[], T]) -> T:
        # The lock is on a sidecar file, as the Go client's: compact replaces
        # the journal, and a lock on the old inode would not exclude a writer
        # that opened the new one.
        with self._mu:
            try:
                lf = os.open(self._path + ".lock", os.O_CREAT | os.O_RDWR, 0o600)
            except OSError as e:
                raise JournalError(f"journal lock: {e}") from e
            try:
                if fcntl is not None:
                    fcntl.flock(lf, fcntl.LOCK_EX)
                try:
                    return fn()
                finally:
                    if fcntl is not None:
                        fcntl.flock(lf, fcntl.LOCK_UN)
            finally:
                os.close(lf)

    def _open_append(self) -> tuple[int, bool]:
        created = not os.path.exists(self._path)
        try:
            fd = os.open(self._path, os.O_CREAT | os.O_RDWR | os.O_APPEND, 0o600)
        except OSError as e:
            raise JournalError(f"journal: {e}") from e
        return fd, created

    def _close_synced(self, fd: int, created: bool) -> None:
        try:
            os.fsync(fd)
        except OSError as e:
            raise JournalError(f"journal fsync: {e}") from e
        finally:
            os.close(fd)
        if created:
            _sync_dir(os.path.dirname(self._path))

    def _append(self, r: Record) -> None:
        line = json.dumps(r.to_json(), ensure_ascii=False).encode("utf-8") + b"\n"
        fd, created = self._open_append()
        try:
            size = os.fstat(fd).st_size
            # A crash may have left the last line without its newline: start
            # on a line of our own so that the torn line stays alone.
            if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line
            _write_all(fd, line)
        except OSError as e:
            os.close(fd)
            raise JournalError(f"journal write: {e}") from e
        self._close_synced(fd, created)

    def _read(self) -> list[Record]:
        try:
            with open(self._path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return []
        except OSError as e:
            raise JournalError(f"journal: {e}") from e
        return list(_parse(data))


def _parse(data: bytes) -> Iterator[Record]:
    for raw in data.split(b"\n"):
        raw = raw.strip()
        if not raw:
            continue
        try:
            yield Record.from_json(json.loads(raw.decode("utf-8")))
        except (ValueError, TypeError, UnicodeDecodeError):
            continue


def _write_all(fd: int, b: bytes) -> None:
    # One write for a line (O_APPEND puts it at the end whole); a short
    # write, rare on a regular file, continues where it stopped.
    while b:
        n = os.write(fd, b)
        b = b[n:]
