package httpx

import (
	"net/http"

	"github.com/restarea/restarea"
)

// statusByCode is the one table from error code to HTTP status.
var statusByCode = map[restarea.Code]int{
	restarea.CodeInvalidRequest:       http.StatusBadRequest,
	restarea.CodeUnauthorized:         http.StatusUnauthorized,
	restarea.CodeForbidden:            http.StatusForbidden,
	restarea.CodeNotFound:             http.StatusNotFound,
	restarea.CodeParentNotFound:       http.StatusNotFound,
	restarea.CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	restarea.CodeConflict:             http.StatusConflict,
	restarea.CodeDeleted:              http.StatusGone,
	restarea.CodePayloadTooLarge:      http.StatusRequestEntityTooLarge,
	restarea.CodeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	restarea.CodeInvalidParent:        http.StatusUnprocessableEntity,
	restarea.CodeRateLimited:          http.StatusTooManyRequests,
	restarea.CodeGlobalRateLimited:    http.StatusTooManyRequests,
	restarea.CodeInternal:             http.StatusInternalServerError,
	restarea.CodeWritesDisabled:       http.StatusServiceUnavailable,
	restarea.CodeUnavailable:          http.StatusServiceUnavailable,
}

// Status returns the HTTP status for code; unknown codes are 500.
func Status(code restarea.Code) int {
	if s, ok := statusByCode[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}
