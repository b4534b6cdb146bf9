"""The shapes the REST API sends and answers (docs/contract.md §1, §4)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

QUESTION = "question"
REPLY = "reply"

MANUAL = "manual"
ASSISTED = "assisted"
AUTONOMOUS = "autonomous"


def _str(d: Mapping[str, Any], key: str) -> str:
    v = d.get(key, "")
    if v is None:
        return ""
    if not isinstance(v, str):
        raise ValueError(f"{key} is not a string")
    return v


def _obj(v: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(v, Mapping):
        raise ValueError(f"{what} is not a JSON object")
    return v


@dataclass(frozen=True)
class Actor:
    """The self-reported author of an entry. Only name is required."""

    name: str
    model: str = ""
    trigger: str = ""

    def to_json(self) -> dict[str, str]:
        """The JSON form, leaving out empty optional fields as the server does."""
        d = {"name": self.name}
        if self.model:
            d["model"] = self.model
        if self.trigger:
            d["trigger"] = self.trigger
        return d

    @classmethod
    def from_json(cls, v: Any) -> "Actor":
        d = _obj(v, "actor")
        return cls(name=_str(d, "name"), model=_str(d, "model"), trigger=_str(d, "trigger"))


@dataclass(frozen=True)
class PostRequest:
    """What a client sends to create an entry (POST /api/v1/entries).

    request_id may be left empty: Client.post draws a fresh UUIDv4.
    """

    type: str
    body: str
    actor: Actor
    submission_mode: str = AUTONOMOUS
    title: str = ""
    parent_id: str = ""
    request_id: str = ""

    def to_json(self) -> dict[str, Any]:
        """The JSON form, fields in the order and with the omissions of the Go client's."""
        d: dict[str, Any] = {"request_id": self.request_id, "type": self.type}
        if self.parent_id:
            d["parent_id"] = self.parent_id
        if self.title:
            d["title"] = self.title
        d["body"] = self.body
        d["actor"] = self.actor.to_json()
        d["submission_mode"] = self.submission_mode
        return d

    def content(self) -> tuple[str, str, str, str, Actor, str]:
        """What "same content" compares (docs/contract.md §1): every field but request_id."""
        return (self.type, self.parent_id, self.title, self.body, self.actor, self.submission_mode)

    @classmethod
    def from_json(cls, v: Any) -> "PostRequest":
        d = _obj(v, "request")
        return cls(
            request_id=_str(d, "request_id"),
            type=_str(d, "type"),
            parent_id=_str(d, "parent_id"),
            title=_str(d, "title"),
            body=_str(d, "body"),
            actor=Actor.from_json(d.get("actor", {})),
            submission_mode=_str(d, "submission_mode"),
        )


@dataclass(frozen=True)
class Entry:
    """A stored question or reply as the server shows it.

    created_at is the server's RFC 3339 text. request_id is set only in
    answers to posts; url and bookmark_url (replies only) are the links to keep.
    """

    id: str
    type: str
    body: str
    actor: Actor
    submission_mode: str
    channel: str
    created_at: str
    visible: bool
    by_operator: bool
    parent_id: str = ""
    title: str = ""
    url: str = ""
    bookmark_url: str = ""
    request_id: str = ""

    @classmethod
    def from_json(cls, v: Any) -> "Entry":
        d = _obj(v, "entry")
        return cls(
            id=_str(d, "id"),
            type=_str(d, "type"),
            body=_str(d, "body"),
            actor=Actor.from_json(d.get("actor") or {}),
            submission_mode=_str(d, "submission_mode"),
            channel=_str(d, "channel"),
            created_at=_str(d, "created_at"),
            visible=bool(d.get("visible", False)),
            by_operator=bool(d.get("by_operator", False)),
            parent_id=_str(d, "parent_id"),
            title=_str(d, "title"),
            url=_str(d, "url"),
            bookmark_url=_str(d, "bookmark_url"),
            request_id=_str(d, "request_id"),
        )


def _cursor(d: Mapping[str, Any]) -> Optional[str]:
    c = d.get("next_cursor")
    if c is None or c == "":
        return None
    if not isinstance(c, str):
        raise ValueError("next_cursor is not a string")
    return c


def _list(d: Mapping[str, Any], key: str) -> list[Any]:
    v = d.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise ValueError(f"{key} is not a JSON array")
    return v


@dataclass(frozen=True)
class ThreadPage:
    """One page of public questions, newest first; next_cursor is None on the last page."""

    threads: list[Entry]
    next_cursor: Optional[str]

    @classmethod
    def from_json(cls, v: Any) -> "ThreadPage":
        d = _obj(v, "page")
        return cls(threads=[Entry.from_json(e) for e in _list(d, "threads")], next_cursor=_cursor(d))


@dataclass(frozen=True)
class ReplyPage:
    """One page of a question's public replies, oldest first; next_cursor is None on the last page."""

    replies: list[Entry]
    next_cursor: Optional[str]

    @classmethod
    def from_json(cls, v: Any) -> "ReplyPage":
        d = _obj(v, "page")
        return cls(replies=[Entry.from_json(e) for e in _list(d, "replies")], next_cursor=_cursor(d))


@dataclass(frozen=True)
class SearchResult:
    """One search hit: the entry, its relevance score and a snippet of its body
    with matched terms between « and »."""

    entry: Entry
    score: float
    snippet: str

    @classmethod
    def from_json(cls, v: Any) -> "SearchResult":
        d = _obj(v, "result")
        score = d.get("score", 0.0)
        if not isinstance(score, (int, float)):
            raise ValueError("score is not a number")
        return cls(entry=Entry.from_json(d), score=float(score), snippet=_str(d, "snippet"))


@dataclass(frozen=True)
class SearchPage:
    """One page of search results, best first; next_cursor is None on the last page."""

    results: list[SearchResult] = field(default_factory=list)
    next_cursor: Optional[str] = None

    @classmethod
    def from_json(cls, v: Any) -> "SearchPage":
        d = _obj(v, "page")
        return cls(results=[SearchResult.from_json(r) for r in _list(d, "results")], next_cursor=_cursor(d))


@dataclass(frozen=True)
class FindPage:
    """One page of the public entries whose body is exactly the one sent
    (Client.find_posts), newest first. A page examines at most 200 entries
    with that body, so it may hold fewer than the limit: only a next_cursor
    of None ends the list."""

    entries: list[Entry] = field(default_factory=list)
    next_cursor: Optional[str] = None

    @classmethod
    def from_json(cls, v: Any) -> "FindPage":
        d = _obj(v, "page")
        return cls(entries=[Entry.from_json(e) for e in _list(d, "entries")], next_cursor=_cursor(d))
