package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/httpx"
)

// Fixed values the fake answers with.
const (
	entryID   = "5b0c6a4e-8f0a-4d1e-9c39-3f1f6f0d2a11"
	parentID  = "7e2d4b7c-1a2b-4c3d-8e9f-0a1b2c3d4e5f"
	requestID = "0e8b4c1a-2f3d-4e5f-9a6b-7c8d9e0f1a2b"
	token     = "s3cret-admin-token"
)

var createdAt = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// call is what the fake saw of the last service call.
type call struct {
	method string
	id     string
	req    restarea.PostRequest
	meta   restarea.PostMeta
	list   restarea.ListOptions
	read   restarea.ReadOptions
	patch  restarea.SettingsPatch
}

// fake is a canned restarea.Service and restarea.AdminService. Its
// behaviour fields are set before the server starts and only read while
// it runs; the calls are guarded by mu.
type fake struct {
	err       error // returned by every method when set
	panicWith any   // every method panics with it when set
	replayed  bool  // Post and OperatorPost answer a replay
	entries   []restarea.Entry
	next      *string

	mu   sync.Mutex
	n    int
	last call
}

func (f *fake) record(c call) error {
	f.mu.Lock()
	f.n++
	f.last = c
	f.mu.Unlock()
	if f.panicWith != nil {
		panic(f.panicWith)
	}
	return f.err
}

// calls returns how many service calls were made and the last one.
func (f *fake) calls() (int, call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n, f.last
}

func entryFrom(req restarea.PostRequest, meta restarea.PostMeta) restarea.Entry {
	return restarea.Entry{
		ID: entryID, RequestID: req.RequestID, Type: req.Type, ParentID: req.ParentID,
		Title: req.Title, Body: req.Body, Actor: req.Actor, SubmissionMode: req.SubmissionMode,
		Channel: meta.Channel, CreatedAt: createdAt, Visible: true,
		URL: "https://rest.example/threads/" + entryID,
	}
}

func (f *fake) Post(_ context.Context, req restarea.PostRequest, meta restarea.PostMeta) (restarea.PostResult, error) {
	req, err := req.Normalize() // the service's check, as node.Post makes it
	if err != nil {
		return restarea.PostResult{}, err
	}
	if err := f.record(call{method: "Post", req: req, meta: meta}); err != nil {
		return restarea.PostResult{}, err
	}
	return restarea.PostResult{Entry: entryFrom(req, meta), Replayed: f.replayed}, nil
}

func (f *fake) ListThreads(_ context.Context, opts restarea.ListOptions) (restarea.ThreadPage, error) {
	if err := f.record(call{method: "ListThreads", list: opts}); err != nil {
		return restarea.ThreadPage{}, err
	}
	return restarea.ThreadPage{Threads: f.entries, NextCursor: f.next}, nil
}

func (f *fake) GetThread(_ context.Context, id string, opts restarea.ReadOptions) (restarea.Entry, error) {
	if err := f.record(call{method: "GetThread", id: id, read: opts}); err != nil {
		return restarea.Entry{}, err
	}
	return restarea.Entry{ID: id, Type: restarea.TypeQuestion, Title: "t", Body: "b", Visible: true}, nil
}

func (f *fake) ListReplies(_ context.Context, threadID string, opts restarea.ListOptions) (restarea.ReplyPage, error) {
	if err := f.record(call{method: "ListReplies", id: threadID, list: opts}); err != nil {
		return restarea.ReplyPage{}, err
	}
	return restarea.ReplyPage{Replies: f.entries, NextCursor: f.next}, nil
}

func (f *fake) GetReply(_ context.Context, id string, opts restarea.ReadOptions) (restarea.Entry, error) {
	if err := f.record(call{method: "GetReply", id: id, read: opts}); err != nil {
		return restarea.Entry{}, err
	}
	return restarea.Entry{ID: id, Type: restarea.TypeReply, ParentID: parentID, Body: "b", Visible: true}, nil
}

func (f *fake) HideEntry(_ context.Context, id string) (restarea.Entry, error) {
	if err := f.record(call{method: "HideEntry", id: id}); err != nil {
		return restarea.Entry{}, err
	}
	return restarea.Entry{ID: id, Type: restarea.TypeQuestion, Visible: false}, nil
}

func (f *fake) UnhideEntry(_ context.Context, id string) (restarea.Entry, error) {
	if err := f.record(call{method: "UnhideEntry", id: id}); err != nil {
		return restarea.Entry{}, err
	}
	return restarea.Entry{ID: id, Type: restarea.TypeQuestion, Visible: true}, nil
}

func (f *fake) DeleteEntry(_ context.Context, id string) error {
	return f.record(call{method: "DeleteEntry", id: id})
}

func (f *fake) ListEntries(_ context.Context, opts restarea.ListOptions) (restarea.EntryPage, error) {
	if err := f.record(call{method: "ListEntries", list: opts}); err != nil {
		return restarea.EntryPage{}, err
	}
	return restarea.EntryPage{Entries: f.entries, NextCursor: f.next}, nil
}

func (f *fake) Settings(_ context.Context) (restarea.Settings, error) {
	if err := f.record(call{method: "Settings"}); err != nil {
		return restarea.Settings{}, err
	}
	return restarea.DefaultSettings(), nil
}

func (f *fake) UpdateSettings(_ context.Context, patch restarea.SettingsPatch) (restarea.Settings, error) {
	if err := f.record(call{method: "UpdateSettings", patch: patch}); err != nil {
		return restarea.Settings{}, err
	}
	return patch.Apply(restarea.DefaultSettings()), nil
}

func (f *fake) OperatorPost(_ context.Context, req restarea.PostRequest, meta restarea.PostMeta) (restarea.PostResult, error) {
	req, err := req.NormalizeOperator()
	if err != nil {
		return restarea.PostResult{}, err
	}
	if err := f.record(call{method: "OperatorPost", req: req, meta: meta}); err != nil {
		return restarea.PostResult{}, err
	}
	e := entryFrom(req, meta)
	e.ByOperator = true
	return restarea.PostResult{Entry: e, Replayed: f.replayed}, nil
}

// discard is a logger for tests that do not look at logs.
var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// serve starts the handler for cfg on a loopback test server; a nil
// Service is f, and with an AdminToken a nil Admin is f too.
func serve(t *testing.T, f *fake, cfg Config) *httptest.Server {
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
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := response{status: res.StatusCode, header: res.Header, raw: string(raw)}
	if method == http.MethodHead {
		return out
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Fatalf("%s %s: Content-Type %q, body %s", method, path, ct, raw)
	}
	var shape struct {
		Data  json.RawMessage  `json:"data"`
		Error *httpx.ErrorBody `json:"error"`
	}
	if err := json.Unmarshal(raw, &shape); err != nil {
		t.Fatalf("%s %s: body is not JSON: %v: %s", method, path, err, raw)
	}
	if (shape.Data == nil) == (shape.Error == nil) {
		t.Fatalf("%s %s: want exactly one of data and error: %s", method, path, raw)
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

func (f *fake) ListAudit(_ context.Context, opts restarea.ListOptions) (restarea.AuditPage, error) {
	if err := f.record(call{method: "ListAudit", list: opts}); err != nil {
		return restarea.AuditPage{}, err
	}
	return restarea.AuditPage{}, nil
}
