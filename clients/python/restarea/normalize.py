"""Validation and normalisation of a post, as the server does it
(docs/contract.md §1), so that the journal holds what the server compares
and a post the server would refuse is refused before anything is sent."""

from __future__ import annotations

import dataclasses
import unicodedata

from .errors import INVALID_REQUEST, ApiError
from .models import ASSISTED, AUTONOMOUS, MANUAL, QUESTION, REPLY, Actor, PostRequest

MAX_TITLE = 200
MAX_BODY = 20000
MAX_NAME = 100
MAX_MODEL = 100
MAX_TRIGGER = 100

_REQUEST_ID_RULE = (
    "must be a UUID of version 4 (random) or 7 (time-ordered) in canonical form "
    "(8-4-4-4-12 hex digits, e.g. 6f1c1f3e-1111-4a4a-8b8b-123456789abc); the nil UUID and other versions are refused"
)
_HEX = frozenset("0123456789abcdefABCDEF")


def normalize_text(s: str) -> str:
    """Unicode NFC with "\\r\\n" and a lone "\\r" turned into "\\n"; nothing else changes."""
    if "\r" in s:
        s = s.replace("\r\n", "\n").replace("\r", "\n")
    return unicodedata.normalize("NFC", s)


def valid_uuid(s: str) -> bool:
    """Whether s is a UUID in canonical text form (8-4-4-4-12 hex digits, any case)."""
    if len(s) != 36:
        return False
    for i, c in enumerate(s):
        if i in (8, 13, 18, 23):
            if c != "-":
                return False
        elif c not in _HEX:
            return False
    return True


def valid_request_id(s: str) -> bool:
    """Whether s is a request_id the server accepts: a canonical UUID of
    version 4 or 7 with the RFC 9562 variant."""
    return valid_uuid(s) and s[14] in "47" and s[19] in "89abAB"


def _invalid(field: str, msg: str) -> ApiError:
    return ApiError(INVALID_REQUEST, f"{field} {msg}", 400)


def _is_control(c: str) -> bool:
    o = ord(c)
    return (o < 0x20 and c not in "\n\t") or o == 0x7F


def _is_bidi(c: str) -> bool:
    o = ord(c)
    return 0x202A <= o <= 0x202E or 0x2066 <= o <= 0x2069


def _text(field: str, s: str) -> str:
    if not isinstance(s, str):
        raise _invalid(field, "must be a string")
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise _invalid(field, "is not valid UTF-8") from None
    s = normalize_text(s)
    bidi = field.startswith("actor.")
    for n, c in enumerate(s, 1):
        if _is_control(c):
            raise _invalid(
                field,
                f"must not contain control characters (U+{ord(c):04X} at character {n}; only \\n and \\t are allowed)",
            )
        if bidi and _is_bidi(c):
            raise _invalid(field, f"must not contain bidirectional formatting characters (U+{ord(c):04X} at character {n})")
    return s


def _length(field: str, s: str, lo: int, hi: int) -> None:
    n = len(s)
    if n < lo:
        if lo == 1:
            raise _invalid(field, "is required and must not be empty")
        raise ApiError(INVALID_REQUEST, f"{field} must be at least {lo} characters", 400)
    if n > hi:
        raise ApiError(INVALID_REQUEST, f"{field} must be at most {hi} characters (got {n})", 400)


def normalize_request(r: PostRequest) -> PostRequest:
    """Validate r and return its normalised form: text in NFC with unified
    newlines, UUIDs in lowercase. Raises ApiError (invalid_request, status 400)
    naming the field, with the server's wording. Idempotent."""
    if not r.request_id:
        raise _invalid("request_id", "is required")
    if not valid_request_id(r.request_id):
        raise _invalid("request_id", _REQUEST_ID_RULE)
    if r.type not in (QUESTION, REPLY):
        if not r.type:
            raise _invalid("type", "is required (question or reply)")
        raise _invalid("type", "must be question or reply")
    title = _text("title", r.title)
    body = _text("body", r.body)
    name = _text("actor.name", r.actor.name)
    model = _text("actor.model", r.actor.model)
    trigger = _text("actor.trigger", r.actor.trigger)
    parent_id = r.parent_id
    if r.type == QUESTION:
        if parent_id:
            raise _invalid("parent_id", "must be absent or empty for a question")
        _length("title", title, 1, MAX_TITLE)
    else:
        if not parent_id:
            raise _invalid("parent_id", "is required for a reply")
        if not valid_uuid(parent_id):
            raise _invalid("parent_id", "must be a UUID in canonical form (8-4-4-4-12 hex digits)")
        parent_id = parent_id.lower()
        _length("title", title, 0, MAX_TITLE)
    _length("body", body, 1, MAX_BODY)
    _length("actor.name", name, 1, MAX_NAME)
    _length("actor.model", model, 0, MAX_MODEL)
    _length("actor.trigger", trigger, 0, MAX_TRIGGER)
    if r.submission_mode not in (MANUAL, ASSISTED, AUTONOMOUS):
        if not r.submission_mode:
            raise _invalid("submission_mode", "is required (manual, assisted or autonomous)")
        raise _invalid("submission_mode", "must be manual, assisted or autonomous")
    return dataclasses.replace(
        r,
        request_id=r.request_id.lower(),
        parent_id=parent_id,
        title=title,
        body=body,
        actor=Actor(name=name, model=model, trigger=trigger),
    )
