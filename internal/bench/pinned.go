package bench

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// PinnedFigure is one client posting to the leader and to a follower in
// turn: the latency of each, measured in the same moments of the run.
type PinnedFigure struct {
	Leader   Stats `json:"leader"`
	Follower Stats `json:"follower"`
}

// pinnedPosts posts new questions from one client, alternately to the
// leader and to a follower, for l.Duration, and summarises each node's
// answers apart. Alternating post by post, not phase by phase, charges the
// machine's drift (other load, the disk's writeback) to both alike, so
// their ratio is steadier than either figure.
func pinnedPosts(ctx context.Context, cl *Client, leader, follower string, l Load, bodyBytes int) PinnedFigure {
	body := strings.Repeat("s", bodyBytes)
	urls := [2]string{leader, follower}
	var lat [2][]time.Duration
	var errs [2]int
	var first [2]error
	deadline := time.Now().Add(l.Duration)
	start := time.Now()
	for i := 0; ctx.Err() == nil && time.Now().Before(deadline) && (l.MaxOps <= 0 || i < l.MaxOps); i++ {
		k := i % 2
		t := time.Now()
		p, err := cl.PostREST(ctx, urls[k], 0, question(body))
		if err = checkPost(p, err, http.StatusCreated); err != nil {
			errs[k]++
			if first[k] == nil {
				first[k] = err
			}
			continue
		}
		lat[k] = append(lat[k], time.Since(t))
	}
	elapsed := time.Since(start)
	// Each node had the client half the time.
	return PinnedFigure{
		Leader:   summarise(lat[0], errs[0], first[0], elapsed/2),
		Follower: summarise(lat[1], errs[1], first[1], elapsed/2),
	}
}
