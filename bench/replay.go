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
	// Exact is true when the storm left exactly RequestIDs new entries.
	Exact bool `json:"exact"`
}

// replayStorm stores n new entries, then replays them with l.Clients
// clients spread over every node, and checks that nothing more was stored.
func replayStorm(ctx context.Context, cl *Client, t *Target, n int, l Load, bodyBytes int, logf func(string, ...any)) (ReplayFigure, error) {
	fig := ReplayFigure{RequestIDs: n}
	before, err := settledCount(ctx, cl, t)
	if err != nil {
		return fig, err
	}
	fig.StoredBefore = before
	body := strings.Repeat("p", bodyBytes)
	reqs := make([]restarea.PostRequest, n)
	ids := make([]string, n)
	for i := range reqs {
		reqs[i] = question(body)
	}
	urls := t.URLs
	first := Drive(ctx, Load{Clients: l.Clients, Duration: 2 * time.Minute, MaxOps: n}, func(ctx context.Context, c, i int) error {
		p, err := cl.PostREST(ctx, urls[c%len(urls)], c, reqs[i])
		if err := checkPost(p, err, http.StatusCreated); err != nil {
			return err
		}
		ids[i] = p.ID
		return nil
	})
	if first.Ops != n {
		return fig, fmt.Errorf("replay storm: storing the %d originals: %d stored, %d errors (%s)", n, first.Ops, first.Errors, first.ErrorSample)
	}
	logf("  stored %d originals; replaying them with %d clients over %d nodes", n, l.Clients, len(urls))
	var mismatches countAtomic
	fig.Stats = Drive(ctx, l, func(ctx context.Context, c, i int) error {
		k := i % n
		p, err := cl.PostREST(ctx, urls[(c+i)%len(urls)], c, reqs[k])
		if err := checkPost(p, err, http.StatusOK); err != nil {
			mismatches.add()
			return err
		}
		if !p.Replayed || p.ID != ids[k] {
			mismatches.add()
			return fmt.Errorf("replay of %s answered id %s replayed=%v, want %s replayed", reqs[k].RequestID, p.ID, p.Replayed, ids[k])
		}
		return nil
	})
	fig.Mismatches = mismatches.load()
	after, err := settledCount(ctx, cl, t)
	if err != nil {
		return fig, err
	}
	fig.StoredAfter = after
	fig.Exact = after-before == n && fig.Mismatches == 0
	return fig, nil
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
