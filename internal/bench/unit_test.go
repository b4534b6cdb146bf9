package bench

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/restarea/restarea/fsm"
)

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	if got := percentile(d, 0.5); got != 50*time.Millisecond {
		t.Errorf("p50 = %v, want 50ms", got)
	}
	if got := percentile(d, 0.99); got != 99*time.Millisecond {
		t.Errorf("p99 = %v, want 99ms", got)
	}
	if got := percentile(nil, 0.99); got != 0 {
		t.Errorf("p99 of nothing = %v", got)
	}
}

func TestMedianRound(t *testing.T) {
	r := func(v ...float64) []Stats {
		var out []Stats
		for i, x := range v {
			out = append(out, Stats{PerSecond: x, Ops: i})
		}
		return out
	}
	for _, tc := range []struct {
		rounds []Stats
		want   float64
	}{
		{nil, 0},
		{r(5), 5},
		{r(6211, 5857, 6344), 6211},
		{r(3, 1, 2), 2},
		{r(1, 4), 4},
		{r(9, 1, 5, 7), 7},
	} {
		rounds := append([]Stats(nil), tc.rounds...)
		if got := medianRound(tc.rounds).PerSecond; got != tc.want {
			t.Errorf("medianRound(%v) = %v, want %v", tc.rounds, got, tc.want)
		}
		for i := range rounds {
			if rounds[i] != tc.rounds[i] {
				t.Errorf("medianRound reordered its argument: %v", tc.rounds)
			}
		}
	}
}

// TestDriveBounded checks that a phase stops at MaxOps and counts errors
// apart from successes.
func TestDriveBounded(t *testing.T) {
	st := Drive(context.Background(), Load{Clients: 8, Duration: time.Minute, MaxOps: 1000}, func(_ context.Context, c, i int) error {
		if i%10 == 0 {
			return errors.New("every tenth fails")
		}
		return nil
	})
	if st.Ops != 900 || st.Errors != 100 {
		t.Errorf("ops %d errors %d, want 900 and 100", st.Ops, st.Errors)
	}
	if st.ErrorSample == "" {
		t.Error("no error sample")
	}
}

// TestWriteSeed builds a small store and checks what it holds through the
// state machine's own reads.
func TestWriteSeed(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "backup.db")
	s, err := WriteSeed(dir, Seed{Entries: 500, ThreadReplies: 120, BodyBytes: 64, Batch: 100}, out)
	if err != nil {
		t.Fatal(err)
	}
	if s.Entries != 500 || s.RawJSONBytes <= 0 || s.BackupBytes <= 0 {
		t.Errorf("seeded %+v", s)
	}
	f, err := fsm.Open(out, fsm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, _ := f.Count(); n != 500 {
		t.Errorf("backup holds %d entries, want 500", n)
	}
	total := 0
	for cursor := ""; ; {
		p, err := f.Replies(s.ThreadID, cursor, 50)
		if err != nil {
			t.Fatal(err)
		}
		total += len(p.Replies)
		if p.NextCursor == nil {
			break
		}
		cursor = *p.NextCursor
	}
	if total != 120 {
		t.Errorf("thread has %d replies, want 120", total)
	}
}
