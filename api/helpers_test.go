package api

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/httpx"
	"github.com/restarea/restarea/internal/testkit"
)

// Fixed values of the tests.
const (
	entryID   = "5b0c6a4e-8f0a-4d1e-9c39-3f1f6f0d2a11"
	parentID  = "7e2d4b7c-1a2b-4c3d-8e9f-0a1b2c3d4e5f"
	requestID = "0e8b4c1a-2f3d-4e5f-9a6b-7c8d9e0f1a2b"
	token     = "s3cret-admin-token"
)

// discard is a logger for tests that do not look at logs.
var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// serve starts the handler for cfg on a loopback test server; a nil
// Service is f, and with an AdminToken a nil Admin is f too.
func serve(t *testing.T, f *testkit.FakeService, cfg Config) *httptest.Server {
	t.Helper()
	if cfg.Service == nil {
		cfg.Service = f
	}
	if cfg.Admin == nil && cfg.AdminToken != "" {
		cfg.Admin = f
	}
	if cfg.Logger == nil {
		cfg.Logger = discard
	}
	return serveExact(t, cfg)
}

// serveExact starts the handler for cfg as given.
func serveExact(t *testing.T, cfg Config) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(New(cfg))
	t.Cleanup(srv.Close)
	return srv
}

// response is a decoded answer.
type response struct {
	status int
	header http.Header
	raw    string
	data   json.RawMessage
	err    *httpx.ErrorBody
}

// do sends one request; headers are given as name, value pairs.
func do(t *testing.T, srv *httptest.Server, method, path, body string, headers ...string) response {
	t.Helper()
	r := testkit.Do(t, srv.Client(), method, srv.URL+path, body, headers...)
	out := response{status: r.Status, header: r.Header, raw: r.Body}
	if method == http.MethodHead {
		return out
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Fatalf("%s %s: Content-Type %q, body %s", method, path, ct, r.Body)
	}
	var shape struct {
		Data  json.RawMessage  `json:"data"`
		Error *httpx.ErrorBody `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.Body), &shape); err != nil {
		t.Fatalf("%s %s: body is not JSON: %v: %s", method, path, err, r.Body)
	}
	if (shape.Data == nil) == (shape.Error == nil) {
		t.Fatalf("%s %s: want exactly one of data and error: %s", method, path, r.Body)
	}
	out.data, out.err = shape.Data, shape.Error
	return out
}

// wantError checks an error answer's status, code and message.
func wantError(t *testing.T, r response, status int, code restarea.Code, msgPart string) {
	t.Helper()
	if r.status != status || r.err == nil || r.err.Code != code {
		t.Fatalf("got %d %s, want %d %s", r.status, r.raw, status, code)
	}
	if !strings.Contains(r.err.Message, msgPart) {
		t.Fatalf("message %q does not mention %q", r.err.Message, msgPart)
	}
}

// decodeData unmarshals the data member into v.
func decodeData(t *testing.T, r response, v any) {
	t.Helper()
	if err := json.Unmarshal(r.data, v); err != nil {
		t.Fatalf("data %s: %v", r.data, err)
	}
}
