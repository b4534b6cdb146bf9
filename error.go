package restarea

import (
	"errors"
	"fmt"
	"time"
)

// Code is a machine-readable error code. Every code maps to exactly one HTTP
// status (the table is internal/httpx.Status), so REST and MCP answers agree.
type Code string

// The error codes of docs/contract.md §§2–5, plus the transport-level ones.
const (
	CodeInvalidRequest       Code = "invalid_request"
	CodeUnauthorized         Code = "unauthorized"
	CodeForbidden            Code = "forbidden"
	CodeNotFound             Code = "not_found"
	CodeParentNotFound       Code = "parent_not_found"
	CodeMethodNotAllowed     Code = "method_not_allowed"
	CodeConflict             Code = "conflict"
	CodeDeleted              Code = "deleted"
	CodePayloadTooLarge      Code = "payload_too_large"
	CodeUnsupportedMediaType Code = "unsupported_media_type"
	CodeInvalidParent        Code = "invalid_parent"
	CodeRateLimited          Code = "rate_limited"
	CodeGlobalRateLimited    Code = "global_rate_limited"
	CodeInternal             Code = "internal"
	CodeWritesDisabled       Code = "writes_disabled"
	CodeUnavailable          Code = "unavailable"
)

// Retryable reports whether a request refused with code may succeed later
// unchanged: a rate limit, writes switched off, or a node that cannot
// decide now. These are the codes answered 429 or 503 over HTTP, and the
// ones whose answers carry a retry delay.
func (c Code) Retryable() bool {
	switch c {
	case CodeRateLimited, CodeGlobalRateLimited, CodeWritesDisabled, CodeUnavailable:
		return true
	}
	return false
}

// Error is an error with a code, a human message and, when it is Retryable, the
// delay after which a retry makes sense.
type Error struct {
	Code       Code
	Message    string
	RetryAfter time.Duration
}

// Error implements error.
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithRetryAfter returns a copy of e that carries a retry delay.
func (e *Error) WithRetryAfter(d time.Duration) *Error {
	c := *e
	c.RetryAfter = d
	return &c
}

// ErrorCode returns the code of err: the code of an *Error in its chain,
// or CodeInternal for any other non-nil error, or "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// ErrorMessage returns the human message of err; internal errors are not
// described to clients.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// RetryAfterSeconds returns the retry delay of err in whole seconds, rounded
// up, or 0 when err carries none. Retryable codes always get at least 1.
func RetryAfterSeconds(err error) int {
	var e *Error
	if !errors.As(err, &e) {
		return 0
	}
	secs := int((e.RetryAfter + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 0 // a delay already past is no delay
		if e.Code.Retryable() {
			secs = 1
		}
	}
	return secs
}
