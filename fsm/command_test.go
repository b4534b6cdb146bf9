package fsm_test

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

func TestCommandRoundTrip(t *testing.T) {
	h := newHarness(t)
	tests := []fsm.Command{
		postCmd(question(t, "q"), "a", "att"),
		{Op: fsm.OpDelete, EntryID: "x", Time: 5},
		{Op: fsm.OpConfigure, Settings: &fsm.SettingsCommand{Patch: restarea.SettingsPatch{WritesDisabled: ptr(true)}, FromConfig: true}},
		{Op: fsm.OpExpire, Expire: &fsm.ExpireCommand{Retention: time.Hour, TombstoneRetention: time.Minute, MaxItems: 3}},
	}
	for _, c := range tests {
		c.Time = h.now
		got, err := fsm.DecodeCommand(h.encode(c))
		if err != nil {
			t.Fatalf("%s: %v", c.Op, err)
		}
		if !reflect.DeepEqual(*got, c) {
			t.Errorf("%s: decoded %+v, want %+v", c.Op, *got, c)
		}
	}
}

func TestResultError(t *testing.T) {
	tests := []struct {
		name  string
		res   *fsm.Result
		code  restarea.Code
		retry int
	}{
		{name: "nil result", res: nil},
		{name: "success", res: &fsm.Result{}},
		{name: "conflict", res: &fsm.Result{Err: &fsm.ResultError{Code: restarea.CodeConflict, Message: "m"}}, code: restarea.CodeConflict},
		{name: "rate limited", res: &fsm.Result{Err: &fsm.ResultError{Code: restarea.CodeRateLimited, RetryAfterSec: 2.5}}, code: restarea.CodeRateLimited, retry: 3},
		{name: "writes disabled", res: &fsm.Result{Err: &fsm.ResultError{Code: restarea.CodeWritesDisabled}}, code: restarea.CodeWritesDisabled, retry: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.res.Error()
			if restarea.ErrorCode(err) != tc.code {
				t.Fatalf("code %q, want %q", restarea.ErrorCode(err), tc.code)
			}
			if got := restarea.RetryAfterSeconds(err); got != tc.retry {
				t.Fatalf("retry after %ds, want %d", got, tc.retry)
			}
		})
	}
}

// Reads and snapshots run while commands are applied (run with -race).
func TestReadsDuringApply(t *testing.T) {
	h := newHarness(t)
	qid := h.create(question(t, "q"))
	var reqs []fsm.Command
	for i := 0; i < 100; i++ {
		reqs = append(reqs, postCmd(question(t, "q"), "a", "x"), postCmd(reply(t, qid, "r"), "b", "y"))
	}
	h.mustSettings(restarea.SettingsPatch{PerSourceLimit: &restarea.Limit{Count: 1000, WindowSeconds: 60}})
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, err := h.f.Threads("", 10); err != nil {
					t.Error(err)
					return
				}
				if _, err := h.f.Replies(qid, "", 10); err != nil {
					t.Error(err)
					return
				}
				if _, err := h.f.Count(); err != nil {
					t.Error(err)
					return
				}
				if snap, err := h.f.Snapshot(); err == nil {
					var sink memSink
					if err := snap.Persist(&sink); err != nil {
						t.Error(err)
					}
					snap.Release()
				}
			}
		}()
	}
	for i := 0; i < len(reqs); i += 8 {
		h.batch(reqs[i:min(i+8, len(reqs))]...)
	}
	close(done)
	wg.Wait()
	if n := h.count(); n != 201 {
		t.Fatalf("Count() = %d, want 201", n)
	}
}
