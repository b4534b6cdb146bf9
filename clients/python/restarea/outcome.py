"""How a post ended: the Go client's outcomes (client/outcome.go), by the same names."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Mapping


class Outcome(str, enum.Enum):
    """The outcome of Client.post. Only UNCONFIRMED is not final: the post
    stays pending in the journal and Client.resume finishes it."""

    CONFIRMED = "confirmed"
    """Stored (201, or 200 with replayed: true) and read back by its id. An
    entry the server reports hidden (visible: false) cannot be read back
    publicly: it is confirmed with Result.hidden set."""

    UNCONFIRMED = "unconfirmed"
    """No answer established the entry as stored and read back (lost answers,
    429 or 503 until the budget ran out, writes disabled, a failed
    read-back). The entry may or may not exist; resume it."""

    CONFLICT = "conflict"
    """The request_id is stored with different content (409), or the journal
    holds different content for it. Nothing was stored or changed."""

    DELETED = "deleted"
    """Stored and later deleted by an operator (410); not re-created."""

    REJECTED = "rejected"
    """Refused for what it is (invalid content, a missing or non-question
    parent, any other 4xx). Not stored."""

    @property
    def final(self) -> bool:
        """Every outcome but UNCONFIRMED ends the post."""
        return self is not Outcome.UNCONFIRMED

    def __str__(self) -> str:
        return self.value


@dataclass
class Result:
    """The report of one post.

    id, url and bookmark_url are the server's, known once an answer said the
    entry is stored (an unconfirmed result may carry them). reason says why
    the outcome is not a plain confirmation. code is the last error code the
    server answered. attempts counts the post requests sent (or tried).
    replayed is set when the answer that stored it was a replay (200,
    replayed: true): an earlier attempt, whose answer was lost, stored it.
    """

    outcome: Outcome
    request_id: str
    id: str = ""
    url: str = ""
    bookmark_url: str = ""
    reason: str = ""
    hidden: bool = False
    code: str = ""
    attempts: int = 0
    replayed: bool = False

    def to_json(self) -> dict[str, Any]:
        """The journal's form, the Go client's Result plus replayed."""
        d: dict[str, Any] = {
            "outcome": self.outcome.value,
            "request_id": self.request_id,
            "id": self.id,
            "url": self.url,
            "bookmark_url": self.bookmark_url,
            "reason": self.reason,
        }
        if self.hidden:
            d["hidden"] = True
        if self.code:
            d["code"] = self.code
        d["attempts"] = self.attempts
        if self.replayed:
            d["replayed"] = True
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Result":
        def s(k: str) -> str:
            v = d.get(k, "")
            return v if isinstance(v, str) else ""

        attempts = d.get("attempts", 0)
        return cls(
            outcome=Outcome(d.get("outcome")),
            request_id=s("request_id"),
            id=s("id"),
            url=s("url"),
            bookmark_url=s("bookmark_url"),
            reason=s("reason"),
            hidden=d.get("hidden") is True,
            code=s("code"),
            attempts=attempts if isinstance(attempts, int) else 0,
            replayed=d.get("replayed") is True,
        )
