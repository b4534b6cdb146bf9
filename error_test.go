package restarea_test

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/restarea/restarea"
)

func TestCodeStrings(t *testing.T) {
	// The wire names of docs/contract.md §§2–5.
	tests := map[restarea.Code]string{
		restarea.CodeInvalidRequest:    "invalid_request",
		restarea.CodeNotFound:          "not_found",
		restarea.CodeParentNotFound:    "parent_not_found",
		restarea.CodeConflict:          "conflict",
		restarea.CodeDeleted:           "deleted",
		restarea.CodeInvalidParent:     "invalid_parent",
		restarea.CodeRateLimited:       "rate_limited",
		restarea.CodeGlobalRateLimited: "global_rate_limited",
		restarea.CodeWritesDisabled:    "writes_disabled",
		restarea.CodeUnavailable:       "unavailable",
	}
	for code, want := range tests {
		if string(code) != want {
			t.Errorf("code %q, want %q", code, want)
		}
	}
}

func TestErrorCodeAndMessage(t *testing.T) {
	conflict := restarea.Errorf(restarea.CodeConflict, "request_id %s was used for other content", "abc")
	tests := []struct {
		name     string
		err      error
		wantCode restarea.Code
		wantMsg  string
	}{
		{"nil", nil, "", "internal error"},
		{"*Error", conflict, restarea.CodeConflict, "request_id abc was used for other content"},
		{"wrapped once", fmt.Errorf("post: %w", conflict), restarea.CodeConflict, "request_id abc was used for other content"},
		{"wrapped twice", fmt.Errorf("node: %w", fmt.Errorf("post: %w", conflict)), restarea.CodeConflict, "request_id abc was used for other content"},
		{"joined", errors.Join(io.EOF, conflict), restarea.CodeConflict, "request_id abc was used for other content"},
		{"with retry", restarea.Errorf(restarea.CodeUnavailable, "no leader").WithRetryAfter(time.Second), restarea.CodeUnavailable, "no leader"},
		{"plain error", errors.New("disk on fire"), restarea.CodeInternal, "internal error"},
		{"wrapped plain error", fmt.Errorf("x: %w", io.ErrUnexpectedEOF), restarea.CodeInternal, "internal error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := restarea.ErrorCode(tt.err); got != tt.wantCode {
				t.Errorf("ErrorCode = %q, want %q", got, tt.wantCode)
			}
			if got := restarea.ErrorMessage(tt.err); got != tt.wantMsg {
				t.Errorf("ErrorMessage = %q, want %q", got, tt.wantMsg)
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	err := restarea.Errorf(restarea.CodeNotFound, "thread %d", 7)
	if got, want := err.Error(), "not_found: thread 7"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
}

func TestWithRetryAfterCopies(t *testing.T) {
	base := restarea.Errorf(restarea.CodeRateLimited, "slow down")
	withDelay := base.WithRetryAfter(3 * time.Second)
	if base.RetryAfter != 0 {
		t.Fatalf("WithRetryAfter changed its receiver: %v", base.RetryAfter)
	}
	if withDelay == base || withDelay.RetryAfter != 3*time.Second || withDelay.Code != base.Code || withDelay.Message != base.Message {
		t.Fatalf("WithRetryAfter = %+v", withDelay)
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	with := func(code restarea.Code, d time.Duration) error {
		return restarea.Errorf(code, "m").WithRetryAfter(d)
	}
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, 0},
		{"plain error", errors.New("x"), 0},
		{"429 without delay", with(restarea.CodeRateLimited, 0), 1},
		{"429 global without delay", with(restarea.CodeGlobalRateLimited, 0), 1},
		{"503 unavailable without delay", with(restarea.CodeUnavailable, 0), 1},
		{"503 writes_disabled without delay", with(restarea.CodeWritesDisabled, 0), 1},
		{"429 1ns rounds up", with(restarea.CodeRateLimited, time.Nanosecond), 1},
		{"429 1s exact", with(restarea.CodeRateLimited, time.Second), 1},
		{"429 1s+1ns rounds up", with(restarea.CodeRateLimited, time.Second+time.Nanosecond), 2},
		{"429 1.5s rounds up", with(restarea.CodeRateLimited, 1500*time.Millisecond), 2},
		{"429 59.001s", with(restarea.CodeGlobalRateLimited, 59*time.Second+time.Millisecond), 60},
		{"503 2s", with(restarea.CodeUnavailable, 2*time.Second), 2},
		{"503 an hour", with(restarea.CodeWritesDisabled, time.Hour), 3600},
		{"429 negative delay", with(restarea.CodeRateLimited, -5*time.Second), 1},
		{"400 without delay", with(restarea.CodeInvalidRequest, 0), 0},
		{"404 without delay", with(restarea.CodeNotFound, 0), 0},
		{"409 without delay", with(restarea.CodeConflict, 0), 0},
		{"500 without delay", with(restarea.CodeInternal, 0), 0},
		{"409 negative delay", with(restarea.CodeConflict, -5*time.Second), 0},
		{"wrapped 429", fmt.Errorf("x: %w", with(restarea.CodeRateLimited, 2500*time.Millisecond)), 3},
		{"wrapped 503 without delay", fmt.Errorf("x: %w", with(restarea.CodeUnavailable, 0)), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := restarea.RetryAfterSeconds(tt.err); got != tt.want {
				t.Fatalf("RetryAfterSeconds = %d, want %d", got, tt.want)
			}
		})
	}
}
