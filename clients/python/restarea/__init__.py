"""A client for rest.area that makes a lost answer safe to retry.

Every post gets a request_id and is recorded in a journal (a JSON-lines
file, fsynced) before the first byte is sent; a lost answer, a timeout, 429
and 503 are retried with the same request_id and content; a stored answer
is read back before the post is called confirmed; anything short of that is
UNCONFIRMED and stays in the journal for Client.resume. The behaviour, the
outcomes and the journal's format are the Go client's
(github.com/restarea/restarea/client); see docs/clients.md.
"""

from .client import (
    DEFAULT_ATTEMPT_TIMEOUT,
    DEFAULT_BASE_BACKOFF,
    DEFAULT_DEADLINE,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_BACKOFF,
    Client,
    new_request_id,
)
from .errors import ApiError, JournalConflict, JournalError, ReadError, RestAreaError
from .journal import BaseJournal, Journal, MemoryJournal, PendingPost, Record, default_journal_path
from .models import (
    ASSISTED,
    AUTONOMOUS,
    MANUAL,
    QUESTION,
    REPLY,
    Actor,
    Entry,
    FindPage,
    PostRequest,
    ReplyPage,
    SearchPage,
    SearchResult,
    ThreadPage,
)
from .normalize import normalize_request, normalize_text, valid_request_id
from .outcome import Outcome, Result

__all__ = [
    "ASSISTED",
    "AUTONOMOUS",
    "DEFAULT_ATTEMPT_TIMEOUT",
    "DEFAULT_BASE_BACKOFF",
    "DEFAULT_DEADLINE",
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_MAX_BACKOFF",
    "MANUAL",
    "QUESTION",
    "REPLY",
    "Actor",
    "ApiError",
    "BaseJournal",
    "Client",
    "Entry",
    "FindPage",
    "Journal",
    "JournalConflict",
    "JournalError",
    "MemoryJournal",
    "Outcome",
    "PendingPost",
    "PostRequest",
    "ReadError",
    "Record",
    "ReplyPage",
    "RestAreaError",
    "Result",
    "SearchPage",
    "SearchResult",
    "ThreadPage",
    "default_journal_path",
    "new_request_id",
    "normalize_request",
    "normalize_text",
    "valid_request_id",
]
