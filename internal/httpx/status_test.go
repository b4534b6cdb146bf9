package httpx

import (
	"net/http"
	"testing"

	"github.com/restarea/restarea"
)

func TestStatus(t *testing.T) {
	tests := []struct {
		code restarea.Code
		want int
	}{
		{restarea.CodeInvalidRequest, http.StatusBadRequest},
		{restarea.CodeUnauthorized, http.StatusUnauthorized},
		{restarea.CodeForbidden, http.StatusForbidden},
		{restarea.CodeNotFound, http.StatusNotFound},
		{restarea.CodeParentNotFound, http.StatusNotFound},
		{restarea.CodeMethodNotAllowed, http.StatusMethodNotAllowed},
		{restarea.CodeConflict, http.StatusConflict},
		{restarea.CodeDeleted, http.StatusGone},
		{restarea.CodePayloadTooLarge, http.StatusRequestEntityTooLarge},
		{restarea.CodeUnsupportedMediaType, http.StatusUnsupportedMediaType},
		{restarea.CodeInvalidParent, http.StatusUnprocessableEntity},
		{restarea.CodeRateLimited, http.StatusTooManyRequests},
		{restarea.CodeGlobalRateLimited, http.StatusTooManyRequests},
		{restarea.CodeInternal, http.StatusInternalServerError},
		{restarea.CodeWritesDisabled, http.StatusServiceUnavailable},
		{restarea.CodeUnavailable, http.StatusServiceUnavailable},
		// unknown codes
		{"", http.StatusInternalServerError},
		{"no_such_code", http.StatusInternalServerError},
		{"NOT_FOUND", http.StatusInternalServerError},
	}
	for _, tt := range tests {
		if got := Status(tt.code); got != tt.want {
			t.Errorf("Status(%q) = %d, want %d", tt.code, got, tt.want)
		}
	}
}

// The codes answered 429 or 503 are exactly the ones the domain calls
// Retryable (they carry a retry delay).
func TestStatusRetryable(t *testing.T) {
	for code, status := range statusByCode {
		want := status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
		if code.Retryable() != want {
			t.Errorf("%s: status %d, Retryable %v", code, status, code.Retryable())
		}
	}
}
