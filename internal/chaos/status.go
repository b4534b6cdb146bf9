package chaos

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/restarea/restarea"
)

// statusAll asks every node for GET /api/v1/cluster at once, each within
// timeout; a node that does not answer (killed, paused, cut off) has a
// nil entry.
func statusAll(ctx context.Context, hc *http.Client, urls []string, timeout time.Duration) []*restarea.ClusterStatus {
	return statusAllWith(ctx, hc, urls, "", timeout)
}

// statusAllWith is statusAll with a bearer token ("" for none).
func statusAllWith(ctx context.Context, hc *http.Client, urls []string, token string, timeout time.Duration) []*restarea.ClusterStatus {
	out := make([]*restarea.ClusterStatus, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			var st restarea.ClusterStatus
			if err := getData(cctx, hc, u+"/api/v1/cluster", token, &st); err == nil {
				out[i] = &st
			}
		}()
	}
	wg.Wait()
	return out
}

// leaderView is the leader the answering nodes agree on: the leader id
// reported with the highest term (an isolated old leader may still claim
// an older term).
type leaderView struct {
	ID   string
	Term uint64
}

func leaderOf(sts []*restarea.ClusterStatus) leaderView {
	var v leaderView
	for _, st := range sts {
		if st != nil && st.LeaderID != "" && st.Term >= v.Term {
			v = leaderView{ID: st.LeaderID, Term: st.Term}
		}
	}
	return v
}

// monitor watches the cluster during a run: it counts leader changes,
// records every node's leadership claims by term (with extra nodes a
// membership fault started, when extra is set) and remembers which node
// index has which node id, so that faults can be aimed at the leader or
// at a follower.
type monitor struct {
	hc    *http.Client
	urls  []string
	token string
	terms *termLog
	// now is the history's clock (optional, set before the monitor runs).
	now func() int64

	mu sync.Mutex
	// extra returns the URLs of the nodes a membership fault added
	// (optional; see watchExtra).
	extra   func() []string
	ids     []string // node id by index, once seen
	leader  leaderView
	changes int
}

func newMonitor(hc *http.Client, urls []string) *monitor {
	return &monitor{hc: hc, urls: urls, ids: make([]string, len(urls)), terms: newTermLog()}
}

// observe polls every node once and updates the view.
func (m *monitor) observe(ctx context.Context) {
	sts := statusAllWith(ctx, m.hc, m.urls, m.token, 700*time.Millisecond)
	var now int64
	if m.now != nil {
		now = m.now()
	}
	m.terms.record(sts, now)
	m.mu.Lock()
	extraFn := m.extra
	m.mu.Unlock()
	if extraFn != nil {
		if extra := extraFn(); len(extra) > 0 {
			m.terms.record(statusAllWith(ctx, m.hc, extra, m.token, 700*time.Millisecond), now)
		}
	}
	v := leaderOf(sts)
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, st := range sts {
		if st != nil && st.NodeID != "" {
			m.ids[i] = st.NodeID
		}
	}
	if v.ID == "" || v.Term < m.leader.Term {
		return
	}
	if m.leader.ID != "" && v.ID != m.leader.ID {
		m.changes++
	}
	m.leader = v
}

// watchExtra makes the monitor also poll the URLs extra returns, for
// leadership claims.
func (m *monitor) watchExtra(extra func() []string) {
	m.mu.Lock()
	m.extra = extra
	m.mu.Unlock()
}

// run polls every interval until ctx ends.
func (m *monitor) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for range maxPolls {
		m.observe(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// leaderIndex returns the index of the node last seen leading, or -1.
func (m *monitor) leaderIndex() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, id := range m.ids {
		if id != "" && id == m.leader.ID {
			return i
		}
	}
	return -1
}

// leaderChanges returns how many times the leader changed.
func (m *monitor) leaderChanges() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changes
}
