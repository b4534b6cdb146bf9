"""Errors the client raises. A post never raises for the server's answer:
its Result says how it ended; only a journal that cannot record raises."""

from __future__ import annotations

# The server's error codes (docs/api.md, docs/contract.md §2-§5).
INVALID_REQUEST = "invalid_request"
UNAUTHORIZED = "unauthorized"
FORBIDDEN = "forbidden"
NOT_FOUND = "not_found"
PARENT_NOT_FOUND = "parent_not_found"
METHOD_NOT_ALLOWED = "method_not_allowed"
CONFLICT = "conflict"
DELETED = "deleted"
PAYLOAD_TOO_LARGE = "payload_too_large"
UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
INVALID_PARENT = "invalid_parent"
RATE_LIMITED = "rate_limited"
GLOBAL_RATE_LIMITED = "global_rate_limited"
INTERNAL = "internal"
WRITES_DISABLED = "writes_disabled"
UNAVAILABLE = "unavailable"


class RestAreaError(Exception):
    """The base of every error this package raises."""


class ApiError(RestAreaError):
    """A definite error answer: {"error": {"code", "message"}} with its HTTP status.

    code is "" when something other than a rest.area node answered (a proxy);
    retry_after is the Retry-After delay in seconds (0 when absent).
    """

    def __init__(self, code: str, message: str, status: int = 0, retry_after: float = 0.0) -> None:
        super().__init__(f"{code or 'error'}: {message}")
        self.code = code
        self.message = message
        self.status = status
        self.retry_after = retry_after


class ReadError(RestAreaError):
    """A read gave up without a definite answer: lost answers, 429 or 503
    until the client's attempts or deadline ran out. Reading again may work."""


class JournalError(RestAreaError):
    """The journal could not be read or written. When Client.post raises it,
    nothing was sent."""


class JournalConflict(JournalError):
    """The journal already holds different content for this request_id: a
    retry must send the original content (docs/contract.md §7, step 4)."""

    def __init__(self) -> None:
        super().__init__("the journal holds different content for this request_id")
