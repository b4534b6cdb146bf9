package transport

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/restarea/restarea/internal/testkit"
)

var (
	lineageOld = Lineage{}
	lineageNew = Lineage{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	lineageAlt = Lineage{16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}
)

func TestJudge(t *testing.T) {
	old := Identity{Lineage: lineageOld, HasState: true}
	recovered := Identity{Lineage: lineageNew, Parent: lineageOld, HasState: true}
	other := Identity{Lineage: lineageAlt, Parent: lineageOld, HasState: true}
	fresh := Identity{}
	for _, tc := range []struct {
		name       string
		mine, peer Identity
		want       Verdict
	}{
		{"both never recovered", old, old, VerdictSame},
		{"both recovered", recovered, recovered, VerdictSame},
		{"a fresh node joins a recovered cluster", fresh, recovered, VerdictSame},
		{"a recovered node sends its snapshot to a fresh one", recovered, fresh, VerdictSame},
		{"a fresh node meets a stale one", fresh, old, VerdictSame},
		{"a stale machine reaches the survivor", recovered, old, VerdictPeerStale},
		{"the survivor reaches a stale machine", old, recovered, VerdictSelfStale},
		{"two recoveries of one cluster", recovered, other, VerdictOther},
		{"a node without data of a recovered lineage", Identity{Lineage: lineageNew}, old, VerdictSame},
	} {
		if got := judge(tc.mine, tc.peer); got != tc.want {
			t.Errorf("%s: judge = %d; want %d", tc.name, got, tc.want)
		}
	}
}

// fencedNode is a Mux with a fixed identity that counts its OnStale calls.
type fencedNode struct {
	verNode
	stale atomic.Int64
}

func listenFenced(t *testing.T, id Identity, opts ...func(*Config)) *fencedNode {
	t.Helper()
	n := &fencedNode{}
	n.verNode = listenVer(t, func(c *Config) {
		c.Identity = func() Identity { return id }
		c.OnStale = func(e *StaleError) {
			if e.Verdict != VerdictSelfStale {
				t.Errorf("OnStale with verdict %d", e.Verdict)
			}
			n.stale.Add(1)
		}
		for _, o := range opts {
			o(c)
		}
	})
	return n
}

// dialRefused dials a from b on both kinds and wants both refused by the
// fence, with an error that says so.
func dialRefused(t *testing.T, a, b *Mux, want string) {
	t.Helper()
	_, err := b.RaftLayer().Dial(raft.ServerAddress(a.Addr().String()), 5*time.Second)
	if err == nil {
		t.Fatal("raft Dial passed the lineage fence")
	}
	var rf *refusal
	if !errors.As(err, &rf) || rf.reason != RefusedLineage || !strings.Contains(err.Error(), want) {
		t.Fatalf("raft Dial: %v; want a lineage refusal saying %q", err, want)
	}
	c := b.HTTPClient(5 * time.Second)
	defer c.CloseIdleConnections()
	if _, err := c.Get("http://" + a.Addr().String() + "/x"); err == nil || !strings.Contains(err.Error(), "lineage fence") {
		t.Fatalf("internal channel: %v; want a lineage refusal", err)
	}
}

func waitRefusedLineage(t *testing.T, m *Mux, want uint64) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, "refusals counted", func() error {
		if got := m.Stats().Refused[RefusedLineage]; got != want {
			return fmt.Errorf("%d lineage refusals; want %d", got, want)
		}
		return nil
	})
}

// A machine of a lost majority that comes back with its data is refused
// by the recovered survivor in both directions, on both kinds, and is the
// only one told that it is stale; the survivor still talks to a new node.
func TestLineageFenceRefusesAStaleMachine(t *testing.T) {
	survivor := listenFenced(t, Identity{Lineage: lineageNew, Parent: lineageOld, HasState: true})
	stale := listenFenced(t, Identity{Lineage: lineageOld, HasState: true})
	joining := listenFenced(t, Identity{})
	serveRPC(t, survivor.Mux, "survivor")
	serveRPC(t, stale.Mux, "stale")

	dialRefused(t, survivor.Mux, stale.Mux, "this node is a machine of the lost majority")
	dialRefused(t, stale.Mux, survivor.Mux, "the peer is a machine of the lost majority")
	// Each end counts each of the four refusals once: two as the dialer,
	// two as the acceptor.
	waitRefusedLineage(t, survivor.Mux, 4)
	waitRefusedLineage(t, stale.Mux, 4)
	if n := stale.stale.Load(); n != 4 {
		t.Fatalf("the stale machine was told %d times; want 4", n)
	}
	if n := survivor.stale.Load(); n != 0 {
		t.Fatalf("the survivor was told it is stale %d times", n)
	}
	if !strings.Contains(stale.log.String(), "delete its data directory") {
		t.Fatalf("the stale machine's log does not say to wipe it:\n%s", stale.log.String())
	}

	serveRPC(t, joining.Mux, "joining")
	roundTrip(t, survivor.Mux, joining.Mux, "survivor")
	roundTrip(t, joining.Mux, survivor.Mux, "joining")
}

// Two clusters recovered from the same one do not talk, and neither is
// told it is stale: the fence cannot know which one the operator keeps.
func TestLineageFenceRefusesUnrelatedLineages(t *testing.T) {
	a := listenFenced(t, Identity{Lineage: lineageNew, HasState: true})
	b := listenFenced(t, Identity{Lineage: lineageAlt, HasState: true})
	serveRPC(t, a.Mux, "a")
	dialRefused(t, a.Mux, b.Mux, "neither was recovered from the other")
	waitRefusedLineage(t, a.Mux, 2)
	if a.stale.Load()+b.stale.Load() != 0 {
		t.Fatal("OnStale called for unrelated lineages")
	}
}

// A node of release v0.1.0 speaks protocol 1, which carries no identity:
// a node whose data is of a recovered lineage refuses it both ways.
func TestLineageFenceRefusesProtocolOne(t *testing.T) {
	recovered := listenFenced(t, Identity{Lineage: lineageNew, HasState: true})
	old := listenVer(t, legacy)
	serveRPC(t, recovered.Mux, "recovered")
	serveRPC(t, old.Mux, "old")
	if _, err := old.RaftLayer().Dial(raft.ServerAddress(recovered.Addr().String()), 5*time.Second); err == nil {
		// v0.1.0's dialer finishes its proofs before the acceptor closes;
		// the connection must still never reach raft.
		t.Log("the v1 dialer's handshake passed; the acceptor closes it after")
	}
	waitRefusedLineage(t, recovered.Mux, 1)
	dialRefused(t, old.Mux, recovered.Mux, "protocol version 1")

	// A cluster never recovered still speaks protocol 1 to v0.1.0.
	plain := listenFenced(t, Identity{HasState: true})
	serveRPC(t, plain.Mux, "plain")
	roundTrip(t, plain.Mux, old.Mux, "plain")
}

// The identities are inside the proofs: an acceptor's proof made for one
// identity does not verify for another.
func TestIdentityIsProven(t *testing.T) {
	a := newConnAuth(clusterSecret, ThisRelease, false)
	nd, na := make([]byte, nonceSize), make([]byte, nonceSize)
	stale, recovered := Identity{HasState: true}, Identity{Lineage: lineageNew, HasState: true}
	p1 := a.proofV2(kindRaft, roleAcceptor, ThisRelease, ThisRelease, ProtocolMax, nd, na, stale, recovered, nil)
	p2 := a.proofV2(kindRaft, roleAcceptor, ThisRelease, ThisRelease, ProtocolMax, nd, na, stale, stale, nil)
	p3 := a.proofV2(kindRaft, roleAcceptor, ThisRelease, ThisRelease, ProtocolMax, nd, na, recovered, recovered, nil)
	if string(p1) == string(p2) || string(p1) == string(p3) {
		t.Fatal("a proof does not depend on both identities")
	}
}

func TestParseIdentity(t *testing.T) {
	id := Identity{Lineage: lineageNew, Parent: lineageAlt, HasState: true}
	got, err := parseIdentity(id.appendTo(nil))
	if err != nil || got != id {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	bad := id.appendTo(nil)
	bad[0] = 2
	if _, err := parseIdentity(bad); err == nil || !strings.Contains(err.Error(), "flags") {
		t.Fatalf("flags 2: %v", err)
	}
	if _, err := parseIdentity(bad[:10]); err == nil {
		t.Fatal("a short identity parsed")
	}
}
