package node

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// preCheck keeps posts the state machine would refuse out of the log. The
// leader, which stamps every command, reads the per-source limit's answer
// for a post from its own state at the time it stamped (fsm.SourceRefusal)
// and, when that is a refusal it can be certain of, answers it without
// appending the post: a refused post does not grow the raft log of every
// node by its body. A refusal by the per-source limit changes nothing in
// the state (the attempt is not recorded), so a post answered here leaves
// the same state as one the state machine refused. Every other answer is
// still decided in the state machine; docs/public-port.md says why the
// later checks are not read beforehand.
type preCheck struct {
	// stamped is the latest time (Unix ns) this node stamped on a command
	// it proposed: a command it appends later applies at that time or
	// later (fsm.advanceClock), so a refusal is read at it.
	stamped atomic.Int64
	// refused counts posts answered by the pre-check.
	refused prometheus.Counter
	// term is the raft term in which this node, as leader, has read its
	// state closely once: from then on every post it applies is its own,
	// and observe sees each result, so the hint below is complete but
	// for the attempts of earlier terms, which the close look committed.
	term atomic.Uint64

	// over holds the sources the limit refused lately, or whose window a
	// post just filled, until their window frees a slot (Unix ns). The cheap look reads the last committed
	// state, which can miss the attempts of the open group (fsm/group.go):
	// a source found here is looked at closely even when the cheap look
	// admits it. It is only a hint (the close look decides), so a source
	// left out when it is full costs a proposal, never a wrong answer.
	mu   sync.Mutex
	over map[string]int64
}

// maxOverSources bounds the hint's memory (about 100 bytes a source).
const maxOverSources = 4096

func newPreCheck(reg prometheus.Registerer) *preCheck {
	p := &preCheck{refused: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "restarea_posts_refused_unlogged_total",
		Help: "Posts this node, as leader, answered with the state machine's refusal (the per-source limit) without appending them to the raft log. They are also counted in restarea_posts_total by the node that received them.",
	})}
	reg.MustRegister(p.refused)
	return p
}

// noteRefused remembers, at time now, that the limit refused source
// until until.
func (p *preCheck) noteRefused(source string, now, until int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.over == nil {
		p.over = make(map[string]int64)
	}
	if _, ok := p.over[source]; !ok && len(p.over) >= maxOverSources {
		for s, u := range p.over {
			if u <= now {
				delete(p.over, s)
			}
		}
		if len(p.over) >= maxOverSources {
			return
		}
	}
	p.over[source] = max(p.over[source], until)
}

// overLimit reports whether the limit refused source lately, with a slot
// still not free at now.
func (p *preCheck) overLimit(source string, now int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.over[source] > now
}

// observe notes a post whose source the limit refused, or whose attempt
// filled its source's window: the source's next post may be refused
// before the cheap look can tell.
func (p *preCheck) observe(cmd *fsm.Command, res *fsm.Result) {
	if cmd.Op != fsm.OpPost || cmd.Post == nil || res == nil {
		return
	}
	switch {
	case res.Err != nil && res.Err.Code == restarea.CodeRateLimited:
		p.noteRefused(cmd.Post.Source, cmd.Time, cmd.Time+int64(res.Err.RetryAfterSec*float64(time.Second)))
	case res.SourceFull > 0:
		p.noteRefused(cmd.Post.Source, cmd.Time, cmd.Time+int64(res.SourceFull))
	}
}

// noteStamp records t as stamped on a command about to be proposed.
func (p *preCheck) noteStamp(t int64) {
	for {
		cur := p.stamped.Load()
		if t <= cur || p.stamped.CompareAndSwap(cur, t) {
			return
		}
	}
}

// refusal returns the state machine's answer for cmd, stamped and about
// to be proposed by this leader, when that answer is certainly a refusal
// by the per-source limit; nil otherwise (propose it). It is certain when
//   - the time is an upper bound of the command's time in the state
//     machine: the stamp, the state's clock or a later stamp of this
//     leader, whichever is latest, and attempts only leave a window as
//     time passes;
//   - the state read holds every attempt and settings change committed
//     before the post arrived: the leader confirms its leadership and
//     waits until its state reflects the commit index (a strong read's
//     barrier). Attempts committed later only add to the count; a
//     settings change still in flight is concurrent with the post, which
//     may be ordered before it.
//
// The cheap look at the last committed state (and at the sources refused
// lately) comes first, so an admitted post costs one read transaction and
// no barrier; only a post that looks refused, or the first of a new
// leader's term, pays for the barrier (a heartbeat round, no disk write).
func (n *Node) refusal(ctx context.Context, cmd *fsm.Command) *fsm.Result {
	p := cmd.Post
	if cmd.Op != fsm.OpPost || p == nil || p.ByOperator || !restarea.ValidUUID(p.NewID) || !restarea.ValidUUID(p.Request.RequestID) {
		return nil // not subject to the limit, or refused by the state machine before it
	}
	at := func() int64 { return max(cmd.Time, n.pre.stamped.Load()) }
	term := n.raft.CurrentTerm()
	look, _, err := n.fsm.SourceRefusal(p.Source, at(), false)
	if err != nil || (look == nil && !n.pre.overLimit(p.Source, at()) && n.pre.term.Load() == term) {
		return nil
	}
	index, err := n.leaderReadIndex()
	if err != nil || n.waitApplied(ctx, index) != nil {
		return nil // not certain: the state machine decides
	}
	// The state machine has applied every command up to index (the
	// entries after its own applied index, if any, are ones it never
	// sees); a read must reflect all it applied.
	applied := n.fsm.AppliedIndex()
	res, read, err := n.fsm.SourceRefusal(p.Source, at(), true)
	if err != nil || read < applied {
		return nil // the state file lags (a stall)
	}
	n.pre.term.Store(term)
	if res == nil {
		return nil // admitted after all
	}
	n.pre.refused.Inc()
	n.pre.observe(cmd, res)
	return res
}
