package fsm_test

import (
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// postCase runs some history on a fresh FSM, then one decisive post, and
// states what docs/contract.md §2 answers to it.
type postCase struct {
	name string
	// run returns the id of the entry the case is about ("" if none) and
	// the result of the decisive post.
	run     func(t *testing.T, h *harness) (string, *outcome)
	status  int
	code    restarea.Code
	retry   bool  // a positive retry delay
	sameID  bool  // the answer carries the id run returned
	visible *bool // the answer's entry visibility
	count   uint64
}

// outcome is a post result as the table compares it.
type outcome struct {
	status  int
	code    restarea.Code
	retry   float64 // seconds
	id      string
	visible bool
}

var limit2 = restarea.SettingsPatch{PerSourceLimit: &restarea.Limit{Count: 2, WindowSeconds: 60}}
var global2 = restarea.SettingsPatch{GlobalLimit: &restarea.Limit{Count: 2, WindowSeconds: 3600}}

// Replays, conflicts, the per-source limit and writes_disabled.
func TestPostRules(t *testing.T) { runPostCases(t, postCases()) }

func runPostCases(t *testing.T, cases []postCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			id, got := tc.run(t, h)
			if got.status != tc.status || got.code != tc.code {
				t.Fatalf("got %d %q, want %d %q", got.status, got.code, tc.status, tc.code)
			}
			if tc.retry != (got.retry > 0) {
				t.Errorf("retry delay %vs, want positive: %v", got.retry, tc.retry)
			}
			if tc.sameID && got.id != id {
				t.Errorf("entry id %q, want the first one %q", got.id, id)
			}
			if !tc.sameID && tc.code == "" && got.id == id {
				t.Errorf("entry id %q, want a new one", got.id)
			}
			if tc.visible != nil && got.visible != *tc.visible {
				t.Errorf("visible %v, want %v", got.visible, *tc.visible)
			}
			if n := h.count(); n != tc.count {
				t.Errorf("Count() = %d, want %d", n, tc.count)
			}
		})
	}
}

// try posts and flattens the result.
func try(h *harness, req restarea.PostRequest, source, attempt string) *outcome {
	h.t.Helper()
	r := h.post(req, source, attempt)
	return flatten(r)
}

func postCases() []postCase {
	return []postCase{
		{
			name: "new question is created",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				return "", try(h, question(t, "q"), "a", "att-1")
			},
			status: 201, count: 1, visible: ptr(true),
		},
		{
			name: "same attempt again (internal retry) is still 201",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				q := question(t, "q")
				first := try(h, q, "a", "att-1")
				return first.id, try(h, q, "a", "att-1")
			},
			status: 201, sameID: true, count: 1,
		},
		{
			name: "same request, other attempt is replayed",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				q := question(t, "q")
				first := try(h, q, "a", "att-1")
				return first.id, try(h, q, "b", "att-2")
			},
			status: 200, sameID: true, visible: ptr(true), count: 1,
		},
		{
			name: "same request over the other channel is replayed",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				q := question(t, "q")
				id := h.create(q)
				c := postCmd(q, "a", "att-2")
				c.Post.Channel = restarea.ChannelMCP
				r := h.apply(c)
				if r.Entry.Channel != restarea.ChannelHTTP {
					t.Errorf("channel %q, want the first one (http)", r.Entry.Channel)
				}
				return id, flatten(r)
			},
			status: 200, sameID: true, count: 1,
		},
		{
			name: "different content, same request_id conflicts",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				q := question(t, "q")
				id := h.create(q)
				other := q
				other.Body = "another body"
				r := try(h, other, "a", "att-2")
				if e, _, _ := h.f.Entry(id); e.Body != q.Body {
					t.Errorf("stored body changed to %q", e.Body)
				}
				return id, r
			},
			status: 409, code: restarea.CodeConflict, count: 1,
		},
		{
			name: "replay over the per-source limit",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				h.mustSettings(limit2)
				q := question(t, "q")
				first := try(h, q, "a", "att-1")
				try(h, q, "a", "att-2")
				return first.id, try(h, q, "a", "att-3")
			},
			status: 429, code: restarea.CodeRateLimited, retry: true, count: 1,
		},
		{
			name: "conflicting attempts count against the per-source limit",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				h.mustSettings(limit2)
				q := question(t, "q")
				first := try(h, q, "a", "att-1")
				other := q
				other.Title = "changed"
				try(h, other, "a", "att-2")
				return first.id, try(h, q, "a", "att-3")
			},
			status: 429, code: restarea.CodeRateLimited, retry: true, count: 1,
		},
		{
			name: "sources are independent",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				h.mustSettings(limit2)
				q := question(t, "q")
				first := try(h, q, "a", "att-1")
				try(h, q, "a", "att-2")
				if r := try(h, q, "a", "att-3"); r.code != restarea.CodeRateLimited {
					t.Fatalf("source a: %q, want rate_limited", r.code)
				}
				return first.id, try(h, q, "b", "att-4")
			},
			status: 200, sameID: true, count: 1,
		},
		{
			name: "allowed again after the window",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				h.mustSettings(limit2)
				q := question(t, "q")
				first := try(h, q, "a", "att-1")
				try(h, q, "a", "att-2")
				h.advance(61 * time.Second)
				return first.id, try(h, q, "a", "att-3")
			},
			status: 200, sameID: true, count: 1,
		},
		{
			name: "refused attempts are not counted",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				h.mustSettings(limit2)
				q := question(t, "q")
				first := try(h, q, "a", "att-1") // t=0
				h.advance(10 * time.Second)
				try(h, q, "a", "att-2") // t=10
				h.advance(20 * time.Second)
				r := try(h, q, "a", "att-3") // t=30: refused
				if r.code != restarea.CodeRateLimited || r.retry != 30 {
					t.Fatalf("at 30s: %q retry %vs, want rate_limited retry 30s", r.code, r.retry)
				}
				h.advance(31 * time.Second)
				// t=61: only the attempt at 10s is in the window, had the
				// refused one counted this would be refused too.
				return first.id, try(h, q, "a", "att-4")
			},
			status: 200, sameID: true, count: 1,
		},
		{
			name: "replay while writes are disabled",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				q := question(t, "q")
				id := h.create(q)
				h.mustSettings(restarea.SettingsPatch{WritesDisabled: ptr(true)})
				return id, try(h, q, "a", "att-2")
			},
			status: 200, sameID: true, visible: ptr(true), count: 1,
		},
		{
			name: "new post while writes are disabled",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				h.mustSettings(restarea.SettingsPatch{WritesDisabled: ptr(true)})
				return "", try(h, question(t, "q"), "a", "att-1")
			},
			status: 503, code: restarea.CodeWritesDisabled, retry: true, count: 0,
		},
		{
			name: "writes enabled again",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				h.mustSettings(restarea.SettingsPatch{WritesDisabled: ptr(true)})
				h.mustSettings(restarea.SettingsPatch{WritesDisabled: ptr(false)})
				return "", try(h, question(t, "q"), "a", "att-1")
			},
			status: 201, count: 1,
		},
	}
}

// flatten reduces a result to what the table compares.
func flatten(r *fsm.Result) *outcome {
	o := &outcome{status: status(r), code: code(r)}
	if r.Err != nil {
		o.retry = r.Err.RetryAfterSec
	}
	if r.Entry != nil {
		o.id, o.visible = r.Entry.ID, r.Entry.Visible
	}
	return o
}
