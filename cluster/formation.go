package cluster

import (
	"context"
	"log/slog"
	"sort"
	"time"

	"github.com/hashicorp/raft"
)

// Plan is what a fresh node should do to become part of a cluster.
type Plan struct {
	// Bootstrap, when set, is the configuration every one of the expected
	// nodes bootstraps with (identical on each, so raft accepts it).
	Bootstrap []raft.Server
	// JoinURL names a peer that already belongs to a cluster: join it.
	JoinURL string
}

// Discover polls the peers at urls until either one of them already
// belongs to a cluster (join it) or expect nodes — this one included — are
// known and none has state (bootstrap them all together). It gives up when
// ctx ends. A node that is already in a cluster never calls it.
//
// Only a node of the bootstrap set may bootstrap: one whose own URL is
// among urls, or, when urls list fewer than expect peers, one that was
// given the others' URLs. Any other fresh node (a fourth StatefulSet pod
// given the first three's names) waits for a peer with state and joins
// it; bootstrapping too, it would write a first configuration of its own
// at the same index and term as the real one, and raft would take the two
// divergent logs for one.
func Discover(ctx context.Context, c *Client, self PeerInfo, urls []string, expect int, log *slog.Logger) (Plan, error) {
	backoff := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		known := map[string]PeerInfo{self.ID: self}
		listed := false // one of urls answered as this node
		for _, u := range urls {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			p, err := c.Peer(pctx, u)
			cancel()
			if err != nil {
				log.Debug("peer not reachable yet", "url", u, "err", err)
				continue
			}
			if p.ID == self.ID {
				listed = true
				continue
			}
			if p.HasState {
				return Plan{JoinURL: u}, nil
			}
			known[p.ID] = p
		}
		member := listed || len(urls) < expect
		if len(known) >= expect && member {
			var servers []raft.Server
			for _, p := range known {
				servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
			}
			sort.Slice(servers, func(i, j int) bool { return servers[i].ID < servers[j].ID })
			return Plan{Bootstrap: servers}, nil
		}
		if attempt%10 == 1 {
			if member {
				log.Info("waiting for peers to bootstrap", "known", len(known), "expect", expect)
			} else {
				log.Info("not one of the --join peers (or not yet reachable through its own name): waiting for a formed cluster to join", "known", len(known), "expect", expect)
			}
		}
		select {
		case <-ctx.Done():
			return Plan{}, ctx.Err()
		case <-time.After(backoff):
		}
		if backoff < 2*time.Second {
			backoff *= 2
		}
	}
}
