package fsm_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/raft"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/httpx"
	"github.com/restarea/restarea/internal/testkit"
)

// t0 is the harness's starting clock (Unix nanoseconds).
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

// harness drives one FSM with increasing log indexes and a clock that
// only moves when a test advances it.
type harness struct {
	t     testing.TB
	path  string
	f     *fsm.FSM
	index uint64
	now   int64
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	h := &harness{t: t, path: filepath.Join(t.TempDir(), "state.db"), now: t0}
	h.f = openFSM(t, h.path)
	t.Cleanup(func() { h.f.Close() })
	return h
}

func openFSM(t testing.TB, path string) *fsm.FSM {
	t.Helper()
	f, err := fsm.Open(path, fsm.Options{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return f
}

// advance moves the clock forward.
func (h *harness) advance(d time.Duration) { h.now += int64(d) }

// encode turns a command into log data; a zero Time means the harness clock.
func (h *harness) encode(c fsm.Command) []byte {
	h.t.Helper()
	if c.Time == 0 {
		c.Time = h.now
	}
	b, err := c.Encode()
	if err != nil {
		h.t.Fatalf("encode: %v", err)
	}
	return b
}

// apply applies one command at the next index.
func (h *harness) apply(c fsm.Command) *fsm.Result {
	h.t.Helper()
	h.index++
	return asResult(h.t, h.f.Apply(&raft.Log{Index: h.index, Type: raft.LogCommand, Data: h.encode(c)}))
}

// batch applies commands in one ApplyBatch call.
func (h *harness) batch(cs ...fsm.Command) []*fsm.Result {
	h.t.Helper()
	logs := make([]*raft.Log, len(cs))
	for i, c := range cs {
		h.index++
		logs[i] = &raft.Log{Index: h.index, Type: raft.LogCommand, Data: h.encode(c)}
	}
	out := h.f.ApplyBatch(logs)
	if len(out) != len(cs) {
		h.t.Fatalf("ApplyBatch returned %d results for %d logs", len(out), len(cs))
	}
	rs := make([]*fsm.Result, len(out))
	for i, o := range out {
		rs[i] = asResult(h.t, o)
	}
	return rs
}

func asResult(t testing.TB, v interface{}) *fsm.Result {
	t.Helper()
	r, ok := v.(*fsm.Result)
	if !ok || r == nil {
		t.Fatalf("apply returned %T %v, want *fsm.Result", v, v)
	}
	return r
}

// question returns testkit.Question(title) normalised, as commands carry it.
func question(t testing.TB, title string) restarea.PostRequest {
	return normalize(t, testkit.Question(title))
}

// reply returns testkit.Reply(parent, body) normalised.
func reply(t testing.TB, parent, body string) restarea.PostRequest {
	return normalize(t, testkit.Reply(parent, body))
}

func normalize(t testing.TB, r restarea.PostRequest) restarea.PostRequest {
	t.Helper()
	n, err := r.Normalize()
	if err != nil {
		t.Fatalf("normalize: %v", err)
	}
	return n
}

// postCmd builds a post command from source with the given attempt id.
func postCmd(req restarea.PostRequest, source, attempt string) fsm.Command {
	return fsm.Command{Op: fsm.OpPost, Post: &fsm.PostCommand{
		Request: req, Source: source, Channel: restarea.ChannelHTTP,
		AttemptID: attempt, NewID: uuid.NewString(),
	}}
}

func (h *harness) post(req restarea.PostRequest, source, attempt string) *fsm.Result {
	h.t.Helper()
	return h.apply(postCmd(req, source, attempt))
}

func (h *harness) operatorPost(req restarea.PostRequest, attempt string) *fsm.Result {
	h.t.Helper()
	c := postCmd(req, "operator", attempt)
	c.Post.ByOperator = true
	return h.apply(c)
}

// create posts req as a new entry and returns its id.
func (h *harness) create(req restarea.PostRequest) string {
	h.t.Helper()
	r := h.post(req, "setup-"+uuid.NewString(), uuid.NewString())
	if r.Err != nil || r.Entry == nil || r.Replayed {
		h.t.Fatalf("create %s: %+v %+v", req.Title, r.Err, r)
	}
	return r.Entry.ID
}

func (h *harness) admin(op fsm.Op, id string) *fsm.Result {
	h.t.Helper()
	return h.apply(fsm.Command{Op: op, EntryID: id})
}

func (h *harness) settings(p restarea.SettingsPatch, fromConfig bool) *fsm.Result {
	h.t.Helper()
	op := fsm.OpSettings
	if fromConfig {
		op = fsm.OpConfigure
	}
	return h.apply(fsm.Command{Op: op, Settings: &fsm.SettingsCommand{Patch: p, FromConfig: fromConfig}})
}

// mustSettings applies an operator patch that must be accepted.
func (h *harness) mustSettings(p restarea.SettingsPatch) {
	h.t.Helper()
	if r := h.settings(p, false); r.Err != nil {
		h.t.Fatalf("settings: %+v", r.Err)
	}
}

func (h *harness) expire(retention, tombs time.Duration, max int) *fsm.Result {
	h.t.Helper()
	return h.apply(fsm.Command{Op: fsm.OpExpire, Expire: &fsm.ExpireCommand{
		Retention: retention, TombstoneRetention: tombs, MaxItems: max,
	}})
}

func (h *harness) count() uint64 {
	h.t.Helper()
	n, err := h.f.Count()
	if err != nil {
		h.t.Fatalf("count: %v", err)
	}
	return n
}

func ptr[T any](v T) *T { return &v }

// status is the HTTP status a result maps to.
func status(r *fsm.Result) int {
	switch {
	case r.Err != nil:
		return httpx.Status(r.Err.Code)
	case r.Replayed:
		return 200
	}
	return 201
}

func code(r *fsm.Result) restarea.Code {
	if r.Err == nil {
		return ""
	}
	return r.Err.Code
}

// dump returns every query answer of f as JSON, walking all pages, so two
// states can be compared byte for byte.
func dump(t testing.TB, f *fsm.FSM) string {
	t.Helper()
	type page struct {
		Items []restarea.Entry `json:"items"`
		Err   restarea.Code    `json:"err,omitempty"`
	}
	var out struct {
		Threads  []restarea.Entry
		Entries  []restarea.Entry
		Replies  map[string]page
		Settings restarea.Settings
		Count    uint64
		Applied  uint64
		Audit    []restarea.AuditRecord
		Finds    map[string]page // by body: what a find of it answers
	}
	out.Threads = walk(t, func(c string) ([]restarea.Entry, *string, error) {
		p, err := f.Threads(c, 7)
		return p.Threads, p.NextCursor, err
	})
	out.Entries = walk(t, func(c string) ([]restarea.Entry, *string, error) {
		p, err := f.Entries(c, 7)
		return p.Entries, p.NextCursor, err
	})
	out.Replies = map[string]page{}
	for _, e := range out.Entries {
		if e.Type != restarea.TypeQuestion {
			continue
		}
		var items []restarea.Entry
		var cursor string
		var failed restarea.Code
		for {
			p, err := f.Replies(e.ID, cursor, 5)
			if err != nil {
				failed = restarea.ErrorCode(err)
				break
			}
			items = append(items, p.Replies...)
			if p.NextCursor == nil {
				break
			}
			cursor = *p.NextCursor
		}
		out.Replies[e.ID] = page{Items: items, Err: failed}
	}
	out.Finds = map[string]page{}
	for _, e := range out.Entries {
		if _, done := out.Finds[e.Body]; done {
			continue
		}
		var items []restarea.Entry
		var failed restarea.Code
		q, err := restarea.FindQuery{Body: e.Body, Limit: 3}.Validate()
		if err != nil {
			t.Fatal(err)
		}
		for {
			p, err := f.Find(q)
			if err != nil {
				failed = restarea.ErrorCode(err)
				break
			}
			items = append(items, p.Entries...)
			if p.NextCursor == nil {
				break
			}
			q.Cursor = *p.NextCursor
		}
		out.Finds[e.Body] = page{Items: items, Err: failed}
	}
	var err error
	if out.Settings, err = f.Settings(); err != nil {
		t.Fatalf("settings: %v", err)
	}
	if out.Count, err = f.Count(); err != nil {
		t.Fatalf("count: %v", err)
	}
	out.Applied = f.AppliedIndex()
	out.Audit = auditTrail(t, f, 7)
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// walk follows next_cursor to the end and returns every item.
func walk(t testing.TB, page func(cursor string) ([]restarea.Entry, *string, error)) []restarea.Entry {
	t.Helper()
	var all []restarea.Entry
	cursor := ""
	for i := 0; ; i++ {
		items, next, err := page(cursor)
		if err != nil {
			t.Fatalf("page %d: %v", i, err)
		}
		all = append(all, items...)
		if next == nil {
			return all
		}
		if i > 10000 {
			t.Fatal("paging does not end")
		}
		cursor = *next
	}
}

// memSink is a raft.SnapshotSink over a buffer.
type memSink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *memSink) ID() string    { return "test" }
func (s *memSink) Close() error  { s.closed = true; return nil }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }

var _ raft.SnapshotSink = (*memSink)(nil)
