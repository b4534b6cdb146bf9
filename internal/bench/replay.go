package bench

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/restarea/restarea"
)

// ReplayFigure is the replay storm: Stored request_ids replayed by many
// clients on every node, and what the cluster holds afterwards.
type ReplayFigure struct {
	Stats
	RequestIDs int `json:"request_ids"`
	// StoredBefore and StoredAfter are the entries the cluster holds
	// (every node agreeing) before the 1,000 were first posted and after
	// the storm.
	StoredBefore int `json:"stored_before"`
	StoredAfter  int `json:"stored_after"`
	// Mismatches counts replays answered with anything but 200 replayed
	// and the id first stored.
	Mismatches int `json:"mismatches"`
	// NewPosts are the new posts acknowledged in rounds alternating with
	// the replays (0 when the storm ran alone); NewPostErrors those that
	// failed, whose outcome is unknown.
	NewPosts      int `json:"new_posts_alongside,omitempty"`
	NewPostErrors int `json:"new_post_errors_alongside,omitempty"`
	// Exact is true when every replay answered the original and the storm
	// left exactly RequestIDs new entries beside the new posts.
	Exact bool `json:"exact"`
	// CPUMsPerReplay is the node processes' CPU per answered replay over
	// the measured replay rounds (0 when unknown).
	CPUMsPerReplay float64 `json:"cpu_ms_per_replay,omitempty"`
}

// replaySet is the stored originals of a replay storm.
type replaySet struct {
	fig        ReplayFigure
	t          *Target
	reqs       []restarea.PostRequest
	ids        []string
	mismatches countAtomic
}

// storeOriginals stores n new entries with clients clients and records
// how many entries the cluster held before.
func storeOriginals(ctx context.Context, cl *Client, t *Target, n, clients, bodyBytes int, logf func(string, ...any)) (*replaySet, error) {
	st := &replaySet{fig: ReplayFigure{RequestIDs: n}, t: t}
	before, err := settledCount(ctx, cl, t)
	if err != nil {
		return st, err
	}
	st.fig.StoredBefore = before
	body := strings.Repeat("p", bodyBytes)
	st.reqs = make([]restarea.PostRequest, n)
	st.ids = make([]string, n)
	for i := range st.reqs {
		st.reqs[i] = question(body)
	}
	urls := t.URLs
	first := Drive(ctx, Load{Clients: clients, Duration: 2 * time.Minute, MaxOps: n}, func(ctx context.Context, c, i int) error {
		p, err := cl.PostREST(ctx, urls[c%len(urls)], c, st.reqs[i])
		if err := checkPost(p, err, http.StatusCreated); err != nil {
			return err
		}
		st.ids[i] = p.ID
		return nil
	})
	if first.Ops != n {
		return st, fmt.Errorf("replay storm: storing the %d originals: %d stored, %d errors (%s)", n, first.Ops, first.Errors, first.ErrorSample)
	}
	logf("  stored %d originals; replaying them with %d clients over %d nodes", n, clients, len(urls))
	return st, nil
}

// replay replays the originals under l; every answer must be 200 with
// the id first stored.
func (st *replaySet) replay(ctx context.Context, cl *Client, l Load) sample {
	urls, n := st.t.URLs, len(st.reqs)
	return driveSample(ctx, l, func(ctx context.Context, c, i int) error {
		k := i % n
		p, err := cl.PostREST(ctx, urls[(c+i)%len(urls)], c, st.reqs[k])
		if err := checkPost(p, err, http.StatusOK); err != nil {
			st.mismatches.add()
			return err
		}
		if !p.Replayed || p.ID != st.ids[k] {
			st.mismatches.add()
			return fmt.Errorf("replay of %s answered id %s replayed=%v, want %s replayed", st.reqs[k].RequestID, p.ID, p.Replayed, st.ids[k])
		}
		return nil
	})
}

// finish summarises the replays and checks what the cluster holds: the
// originals, plus the new posts acknowledged meanwhile (newPosts, from
// rounds alternating with the replays), plus at most one per new post
// whose outcome is unknown (an error answer).
func (st *replaySet) finish(ctx context.Context, cl *Client, replays, newPosts sample) error {
	fig := &st.fig
	fig.Stats = replays.stats()
	fig.Mismatches = st.mismatches.load()
	fig.NewPosts, fig.NewPostErrors = len(newPosts.lat), newPosts.errors
	after, err := settledCount(ctx, cl, st.t)
	if err != nil {
		return err
	}
	fig.StoredAfter = after
	extra := after - fig.StoredBefore - fig.RequestIDs - fig.NewPosts
	fig.Exact = fig.Mismatches == 0 && extra >= 0 && extra <= fig.NewPostErrors
	return nil
}

// settledCount waits until every node reports the same number of stored
// entries twice in a row, and returns it.
func settledCount(ctx context.Context, cl *Client, t *Target) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	last := -1
	for {
		same := true
		v0 := -1
		for _, u := range t.URLs {
			v, err := cl.Gauge(ctx, u, "restarea_entries")
			if err != nil || (v0 >= 0 && int(v) != v0) {
				same = false
				break
			}
			v0 = int(v)
		}
		if same && v0 == last {
			return v0, nil
		}
		if same {
			last = v0
		} else {
			last = -1
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("nodes do not agree on the number of stored entries")
		case <-time.After(200 * time.Millisecond):
		}
	}
}
