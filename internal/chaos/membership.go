package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/client"
)

// ClassMembership is the fault class of membership changes, made the way
// an operator makes them: members are removed through the admin API
// (DELETE /api/v1/admin/cluster/members/{id}) and nodes join through
// --join. It is not in a run's default classes (see Config.Faults).
const ClassMembership = "membership"

// Fault kinds of class membership.
const (
	// RemoveFollower removes a follower, kills it and wipes its data;
	// undone by starting it fresh under a new id, which joins.
	RemoveFollower = "remove-follower"
	// RemoveLeader removes the leader (it hands leadership over first)
	// and stops it gracefully; undone by starting it on its data, which
	// makes it join again under its id.
	RemoveLeader = "remove-leader"
	// GrowShrink starts growNodes more nodes that join (3 → 5); undone by
	// removing them, highest first, and stopping them.
	GrowShrink = "grow-shrink"
	// ReplaceNode removes a node, kills it and wipes its data; undone by
	// starting a fresh node under the same id and address, which joins.
	ReplaceNode = "replace-node"
)

// growNodes is how many nodes GrowShrink adds.
const growNodes = 2

// memberTimeout bounds one membership step: a removal, or a joining
// node's wait to be a ready member.
const memberTimeout = time.Minute

// membershipKinds are the kinds of class membership a cluster of n nodes
// takes: every one needs a quorum left after one removal.
func membershipKinds(n int) []string {
	if n < 3 {
		return nil
	}
	return []string{RemoveFollower, RemoveLeader, GrowShrink, ReplaceNode}
}

// isMembership reports whether kind is of class membership.
func isMembership(kind string) bool {
	return slices.Contains([]string{RemoveFollower, RemoveLeader, GrowShrink, ReplaceNode}, kind)
}

// MemberDriver is a FaultDriver that can also stop, wipe and start nodes
// under a chosen id, and start extra nodes, for the membership faults.
// The removals themselves go through the admin API, not the driver.
// Indexes below len(Target.URLs()) are the target's nodes; AddNode
// returns higher ones.
type MemberDriver interface {
	// Stop stops node i: gracefully (SIGTERM, wait for the exit) or with
	// SIGKILL.
	Stop(ctx context.Context, i int, graceful bool) error
	// Wipe erases the data of the stopped node i.
	Wipe(ctx context.Context, i int) error
	// StartAs starts the stopped node i under id; it joins the cluster.
	StartAs(ctx context.Context, i int, id string) error
	// AddNode starts a node with no state that joins the cluster, and
	// returns its index, id and URL.
	AddNode(ctx context.Context) (i int, id, url string, err error)
	// SetOut records that node i was removed and stopped for good.
	SetOut(i int)
	// NodeID returns the id node i runs under.
	NodeID(i int) string
}

// members carries out the membership faults of a run. Its state is the
// fault in force (one at a time, like every fault) and the generation of
// new ids.
type members struct {
	d     MemberDriver
	admin *client.Admin
	hc    *http.Client
	urls  []string
	token string

	gen int // new ids taken so far

	// finalized is set once a rot fault raised the cluster version, at
	// log index finalIndex.
	finalized  bool
	finalIndex uint64

	mu     sync.Mutex
	extras []memberNode // nodes GrowShrink added, still running
	// pending is the node a remove/replace took out, to be started again.
	pending *memberNode
}

// memberNode is a node a membership fault started or took out.
type memberNode struct {
	index   int
	id, url string
}

func newMembers(d MemberDriver, hc *http.Client, urls []string, token string) (*members, error) {
	admin, err := client.NewAdmin(token, client.Options{
		Servers: urls, HTTPClient: hc, MaxAttempts: 3, Deadline: 20 * time.Second, AttemptTimeout: 10 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("chaos: admin client for the membership faults: %w", err)
	}
	return &members{d: d, admin: admin, hc: hc, urls: urls, token: token}, nil
}

// extraURLs returns the URLs of the extra nodes running now, so that the
// monitor watches them too.
func (m *members) extraURLs() []string {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, e := range m.extras {
		out = append(out, e.url)
	}
	return out
}

// inject makes the membership change kind on nodes (one target node, or
// none for GrowShrink). It returns the indexes the fault involves.
func (m *members) inject(ctx context.Context, kind string, nodes []int) ([]int, error) {
	switch kind {
	case GrowShrink:
		var errs error
		var added []int
		for range growNodes {
			i, id, u, err := m.d.AddNode(ctx)
			if err != nil {
				errs = errors.Join(errs, err)
				break
			}
			m.mu.Lock()
			m.extras = append(m.extras, memberNode{index: i, id: id, url: u})
			m.mu.Unlock()
			added = append(added, i)
			if err := m.awaitMember(ctx, id, u); err != nil {
				errs = errors.Join(errs, err)
				break
			}
		}
		return added, errs
	case RemoveFollower, RemoveLeader, ReplaceNode:
		if len(nodes) != 1 {
			return nodes, fmt.Errorf("%s needs one node, got %v", kind, nodes)
		}
		i := nodes[0]
		id := m.d.NodeID(i)
		if err := m.remove(ctx, id, m.urls[i]); err != nil {
			return nodes, err
		}
		m.mu.Lock()
		m.pending = &memberNode{index: i, id: id, url: m.urls[i]}
		m.mu.Unlock()
		// A removed node is stopped, as an operator would; a wiped one
		// is gone for good, so it is killed.
		if err := m.d.Stop(ctx, i, kind == RemoveLeader); err != nil {
			return nodes, err
		}
		if kind != RemoveLeader {
			if err := m.d.Wipe(ctx, i); err != nil {
				return nodes, err
			}
		}
		return nodes, nil
	}
	return nodes, fmt.Errorf("chaos: %q is not a membership fault", kind)
}

// undo reverses the fault in force: the removed node is started again
// (under a new id after RemoveFollower) and awaited as a ready member;
// the extra nodes are removed and stopped.
func (m *members) undo(ctx context.Context, kind string) error {
	m.mu.Lock()
	pending, extras := m.pending, m.extras
	m.pending, m.extras = nil, nil
	m.mu.Unlock()
	var errs error
	if pending != nil {
		id := pending.id
		if kind == RemoveFollower {
			m.gen++
			id = fmt.Sprintf("%s-r%d", baseID(pending.id), m.gen)
		}
		err := m.d.StartAs(ctx, pending.index, id)
		if err == nil {
			err = m.awaitMember(ctx, id, pending.url)
		}
		errs = errors.Join(errs, err)
	}
	// Highest first, as the README says to scale down.
	for k := len(extras) - 1; k >= 0; k-- {
		e := extras[k]
		err := m.remove(ctx, e.id, e.url)
		if err == nil {
			err = m.d.Stop(ctx, e.index, true)
		} else {
			// A node that could not be removed is stopped anyway: the run
			// must not leave processes behind; the membership check then
			// reports it still listed.
			m.d.Stop(ctx, e.index, false)
		}
		m.d.SetOut(e.index)
		errs = errors.Join(errs, err)
	}
	return errs
}

// baseID strips the "-rN" suffix of an id RemoveFollower gave, so that
// node2 becomes node2-r1, then node2-r2, never node2-r1-r2.
func baseID(id string) string {
	k := strings.LastIndex(id, "-r")
	if k <= 0 || k+2 == len(id) {
		return id
	}
	for _, c := range id[k+2:] {
		if c < '0' || c > '9' {
			return id
		}
	}
	return id[:k]
}

// remove removes member id (serving at u) through the admin API and waits
// until the cluster no longer lists it. A removal whose answer was lost,
// or that met a leader change, is checked and tried again.
func (m *members) remove(ctx context.Context, id, u string) error {
	ctx, cancel := context.WithTimeout(ctx, memberTimeout)
	defer cancel()
	var last error
	for try := 0; try < 20; try++ {
		_, err := m.admin.RemoveMember(ctx, id)
		var rerr *restarea.Error
		if errors.As(err, &rerr) && rerr.Code == restarea.CodeNotFound {
			err = nil // an earlier attempt whose answer was lost did it
		}
		if err == nil {
			if ml, lerr := m.membersBesides(ctx, u); lerr == nil && !listed(ml.Members, id) {
				return nil
			} else if lerr != nil {
				err = lerr
			} else {
				err = fmt.Errorf("%s still listed after its removal", id)
			}
		}
		last = err
		if !sleep(ctx, time.Duration(try+1)*250*time.Millisecond) {
			break
		}
	}
	return fmt.Errorf("removing %s: %w", id, last)
}

// membersBesides is the member list as a node other than the one at skip
// sees it, from one that knows a leader. The removed node itself never
// learns of its removal: the leader stops replicating to it as soon as
// the change is in its log, so its own list keeps it for good.
func (m *members) membersBesides(ctx context.Context, skip string) (client.MemberList, error) {
	m.mu.Lock()
	urls := slices.Clone(m.urls)
	for _, e := range m.extras {
		urls = append(urls, e.url)
	}
	m.mu.Unlock()
	last := errors.New("no other node to ask")
	for _, u := range urls {
		if u == skip {
			continue
		}
		var ml client.MemberList
		err := getData(ctx, m.hc, u+"/api/v1/admin/cluster/members", m.token, &ml)
		switch {
		case err != nil:
			last = err
		case ml.LeaderID == "":
			last = fmt.Errorf("%s knows no leader", u)
		default:
			return ml, nil
		}
	}
	return client.MemberList{}, last
}

func listed(ms []restarea.Member, id string) bool {
	for _, mb := range ms {
		if mb.ID == id {
			return true
		}
	}
	return false
}

// awaitMember waits until the node at u answers /readyz and both it and
// the leader list id as a voter.
func (m *members) awaitMember(ctx context.Context, id, u string) error {
	ctx, cancel := context.WithTimeout(ctx, memberTimeout)
	defer cancel()
	if err := waitReady(ctx, m.hc, u); err != nil {
		return fmt.Errorf("%s at %s: %w", id, u, err)
	}
	last := "not asked"
	for range maxPolls {
		var st restarea.ClusterStatus
		err := getData(ctx, m.hc, u+"/api/v1/cluster", m.token, &st)
		switch {
		case err != nil:
			last = err.Error()
		case st.NodeID != id:
			last = fmt.Sprintf("%s answers as %q", u, st.NodeID)
		case !isVoter(st.Members, id):
			last = fmt.Sprintf("%s does not list itself as a voter", id)
		default:
			ml, err := m.admin.Members(ctx)
			if err == nil && isVoter(ml.Members, id) {
				return nil
			}
			last = fmt.Sprintf("the leader does not list %s yet (%v)", id, err)
		}
		if !sleep(ctx, 100*time.Millisecond) {
			break
		}
	}
	return fmt.Errorf("%s did not become a member: %s", id, last)
}

func isVoter(ms []restarea.Member, id string) bool {
	for _, mb := range ms {
		if mb.ID == id && mb.Suffrage == "voter" {
			return true
		}
	}
	return false
}

// runMember carries out one membership fault: the change, the hold and
// the undo. The change and the undo are finished even when ctx ends
// (each step is bounded by memberTimeout): a node left removed or an
// extra node left running would fail the check for the wrong reason.
func (r *faultRunner) runMember(ctx context.Context, e FaultEvent) {
	leader := r.mon.leaderIndex()
	var nodes []int
	switch e.Kind {
	case RemoveLeader:
		if leader < 0 {
			leader = e.Pick % r.n
		}
		nodes = []int{leader}
	case ReplaceNode:
		nodes = []int{e.Pick % r.n}
	case RemoveFollower:
		nodes = e.targets(r.n, leader)
	}
	rec := FaultRecord{Kind: e.Kind, Nodes: nodes, StartNs: r.hist.Now()}
	r.log.Info("fault", "kind", e.Kind, "nodes", nodes, "hold", e.Hold)
	var err error
	if r.mem == nil {
		err = errors.New("the target's driver cannot change members")
	} else {
		uctx := context.WithoutCancel(ctx)
		var got []int
		got, err = r.mem.inject(uctx, e.Kind, nodes)
		rec.Nodes = got
		if err == nil {
			sleep(ctx, e.Hold)
		}
		err = errors.Join(err, r.mem.undo(uctx, e.Kind))
	}
	rec.EndNs = r.hist.Now()
	if err != nil {
		rec.Error = err.Error()
		r.log.Warn("fault", "kind", e.Kind, "nodes", rec.Nodes, "err", err)
	} else {
		r.log.Info("membership change undone", "kind", e.Kind, "nodes", rec.Nodes,
			"after", time.Duration(rec.EndNs-rec.StartNs).Round(time.Millisecond))
	}
	r.mu.Lock()
	r.records = append(r.records, rec)
	r.mu.Unlock()
}
