package fsm_test

import (
	"math/rand"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// SourceRefusal, asked before a post is applied, never refuses what the
// state machine then admits, and when it refuses, the state machine
// answers exactly the same (code, message, delay). Asked at a later time
// than the post's, a refusal still holds for the post: a leader reads it
// at an upper bound of the time the post would apply at. Random
// sequences cover new posts, replays, conflicts, operator posts, both
// kinds of record (exact lists and slots), limits changed on the way and
// stamps behind the state's clock.
func TestSourceRefusalNeverRefusesWhatTheStateMachineAdmits(t *testing.T) {
	// Commits without fsync: the test applies thousands of posts.
	path := t.TempDir() + "/state.db"
	f, err := fsm.Open(path, fsm.Options{Unsynced: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := &harness{t: t, path: path, f: f, now: t0}
	rng := rand.New(rand.NewSource(26))
	sources := []string{"198.51.100.1", "198.51.100.2", "2001:db8::/56", ""}
	limits := []restarea.Limit{{Count: 1, WindowSeconds: 1}, {Count: 3, WindowSeconds: 60}, {Count: 5, WindowSeconds: 7},
		{Count: 256, WindowSeconds: 60}, {Count: 257, WindowSeconds: 60}, {Count: 300, WindowSeconds: 120}}
	cur := restarea.Limit{Count: 3, WindowSeconds: 60}
	h.mustSettings(restarea.SettingsPatch{PerSourceLimit: &cur})
	var stored []restarea.PostRequest
	outcomes := map[string]int{}
	for step := range 2500 {
		if rng.Intn(120) == 0 {
			cur = limits[rng.Intn(len(limits))]
			h.mustSettings(restarea.SettingsPatch{PerSourceLimit: &cur})
		}
		switch rng.Intn(8) {
		case 0:
			h.advance(time.Duration(rng.Int63n(int64(90 * time.Second))))
		case 1:
			h.advance(-time.Duration(rng.Int63n(int64(2 * time.Second)))) // a stamp behind the state's clock
		default:
			h.advance(time.Duration(rng.Int63n(int64(300 * time.Millisecond))))
		}
		src := sources[rng.Intn(len(sources))]
		var req restarea.PostRequest
		switch {
		case len(stored) > 0 && rng.Intn(4) == 0:
			req = stored[rng.Intn(len(stored))] // a replay
		case len(stored) > 0 && rng.Intn(8) == 0:
			req = stored[rng.Intn(len(stored))]
			req.Body += " changed" // a conflict
		default:
			req = question(t, "q")
		}
		burst := 1
		if rng.Intn(80) == 0 {
			burst = 100 + rng.Intn(250) // enough to fill a slotted window
		}
		for range burst {
			h.advance(time.Duration(rng.Int63n(int64(time.Millisecond))))
			pre, index, err := h.f.SourceRefusal(src, h.now, true)
			if err != nil {
				t.Fatal(err)
			}
			if index != h.index {
				t.Fatalf("step %d: SourceRefusal read index %d, applied %d", step, index, h.index)
			}
			later, _, err := h.f.SourceRefusal(src, h.now+rng.Int63n(int64(20*time.Second)), true)
			if err != nil {
				t.Fatal(err)
			}
			cmd := postCmd(req, src, uuid.NewString())
			operator := rng.Intn(50) == 0
			cmd.Post.ByOperator = operator
			got := h.apply(cmd)
			switch {
			case operator:
				// The node never asks for operator posts; the limit does not apply.
			case pre != nil && (got.Err == nil || *got.Err != *pre.Err):
				t.Fatalf("step %d, source %q: SourceRefusal %+v, the state machine answered %+v", step, src, *pre.Err, got)
			case pre == nil && got.Err != nil && got.Err.Code == restarea.CodeRateLimited:
				t.Fatalf("step %d, source %q: SourceRefusal admitted, the state machine answered %+v", step, src, *got.Err)
			case later != nil && (got.Err == nil || got.Err.Code != restarea.CodeRateLimited):
				t.Fatalf("step %d, source %q: refused at a later time (%+v), admitted at the post's: %+v", step, src, *later.Err, got)
			}
			if got.Err == nil {
				stored = append(stored, req)
				outcomes["admitted"]++
			} else {
				outcomes[string(got.Err.Code)]++
			}
			if pre != nil && !operator {
				kind := "pre-refused (exact list)"
				if cur.Count > 256 {
					kind = "pre-refused (slots)"
				}
				outcomes[kind]++
			}
		}
	}
	t.Logf("outcomes %v", outcomes)
	for _, want := range []string{"admitted", "pre-refused (exact list)", "pre-refused (slots)", string(restarea.CodeConflict), string(restarea.CodeRateLimited)} {
		if outcomes[want] == 0 {
			t.Fatalf("outcomes %v: the sequence never reached %s", outcomes, want)
		}
	}
}

// The cheap look (current false) reads the last committed state: with a
// group open it may miss the latest attempts (so it admits), never
// refuse what the current state admits.
func TestSourceRefusalCommittedStateLags(t *testing.T) {
	path := t.TempDir() + "/state.db"
	f, err := fsm.Open(path, fsm.Options{CommitEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := &harness{t: t, path: path, f: f, now: t0}
	one := restarea.Limit{Count: 1, WindowSeconds: 60}
	h.mustSettings(restarea.SettingsPatch{PerSourceLimit: &one})
	if r, _, err := f.SourceRefusal("a", h.now, true); err != nil || r != nil {
		t.Fatalf("before any attempt: %+v %v", r, err)
	}
	h.advance(time.Second)
	if r := h.post(question(t, "first"), "a", uuid.NewString()); r.Err != nil {
		t.Fatalf("first post: %+v", r.Err)
	}
	h.advance(time.Second)
	if !f.GroupPending() {
		t.Fatal("the post's batch is not waiting in the open group")
	}
	if r, index, err := f.SourceRefusal("a", h.now, false); err != nil || r != nil || index == h.index {
		t.Fatalf("committed state: %+v at %d (applied %d), %v; want admitted, older", r, index, h.index, err)
	}
	r, index, err := f.SourceRefusal("a", h.now, true)
	if err != nil || r == nil || index != h.index {
		t.Fatalf("current state: %+v at %d (applied %d), %v; want refused", r, index, h.index, err)
	}
	got := h.post(question(t, "second"), "a", uuid.NewString())
	if got.Err == nil || *got.Err != *r.Err {
		t.Fatalf("state machine %+v, SourceRefusal %+v", got.Err, r.Err)
	}
	if r.Err.RetryAfterSec != 59 {
		t.Fatalf("delay %v, want 59s (the first attempt, a second before, leaves the window then)", r.Err.RetryAfterSec)
	}
}
