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
func Discover(ctx context.Context, c *Client, self PeerInfo, urls []string, expect int, log *slog.Logger) (Plan, error) {
	backoff := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		known := map[string]PeerInfo{self.ID: self}
		for _, u := range urls {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			p, err := c.Peer(pctx, u)
			cancel()
			if err != nil {
				log.Debug("peer not reachable yet", "url", u, "err", err)
				continue
			}
			if p.HasState && p.ID != self.ID {
				return Plan{JoinURL: u}, nil
			}
			known[p.ID] = p
		}
		if len(known) >= expect {
			var servers []raft.Server
			for _, p := range known {
				servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
			}
			sort.Slice(servers, func(i, j int) bool { return servers[i].ID < servers[j].ID })
			return Plan{Bootstrap: servers}, nil
		}
		if attempt%10 == 1 {
			log.Info("waiting for peers to bootstrap", "known", len(known), "expect", expect)
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
