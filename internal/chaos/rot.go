package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/restarea/restarea/internal/localcluster"
)

// ClassRot is the fault class of rotting disks: one byte of a stored post
// changes in a stopped node's raft log or state file, the node starts
// again, and it must notice (docs/disasters.md, "When a node's disk
// rots"): stop by itself, exit non-zero, serve nothing of the damaged
// bytes. The fault is then undone by that runbook — the node is removed,
// wiped and joins again under a new id — so it is opt-in, like
// ClassMembership, and needs a MemberDriver.
const ClassRot = "rot"

// Fault kinds of class rot.
const (
	// RotLog changes a digit of a post's body in the newest entry after
	// the node's newest snapshot in raft.db: raft reads it again at start.
	RotLog = "rot-log"
	// RotState changes a digit of a post's body in an entry record of
	// state.db: a read of it or the scrub must find it.
	RotState = "rot-state"
)

// VRotUndetected: a node started on damaged data and did not stop by
// itself within rotDetectTimeout.
const VRotUndetected = "rot_undetected"

// rotMarker is what every body of the workload starts with (workload.go),
// followed by a number: the digit after it is the one changed.
var rotMarker = []byte("chaos body ")

// RotArgs are the `restarea serve` flags of local nodes in a run that may
// take rot faults: a scrub pass over the state file every few seconds, so
// that a damaged record nobody reads is found within rotDetectTimeout.
var RotArgs = []string{"--scrub-interval=5s", "--scrub-rate=32MiB"}

// rotStopLine is what a node that found damaged bytes logs as it stops.
const rotStopLine = "stopping: this node's data is damaged"

// rotDetectTimeout bounds the wait for a node on damaged data to stop by
// itself: a rotten log entry is met at start, a rotten record by the
// scrub, which the chaos command runs fast (RotArgs).
const rotDetectTimeout = 90 * time.Second

func rotKinds(classes []string) []string {
	if !slices.Contains(classes, ClassRot) {
		return nil
	}
	return []string{RotLog, RotState}
}

func isRot(kind string) bool { return kind == RotLog || kind == RotState }

// RotDriver is a MemberDriver that can damage a stopped node's files and
// tell when a node's process ended by itself.
type RotDriver interface {
	MemberDriver
	// Rot changes one byte of node i's file for kind (RotLog or RotState),
	// in a value written after log index after (so that it carries a
	// checksum); the node is stopped. It returns what it changed, as text.
	Rot(ctx context.Context, i int, kind string, after uint64) (string, error)
	// WaitExit waits up to timeout for node i's process to end by itself
	// and returns its exit code and the end of what it logged; ok is false
	// when it still runs.
	WaitExit(ctx context.Context, i int, timeout time.Duration) (code int, log string, ok bool)
	// Restart starts the stopped node i again on its data.
	Restart(ctx context.Context, i int) error
}

// rots records what each rot fault found, for the checker.
type rots struct {
	mu         sync.Mutex
	undetected []Violation
}

func (r *rots) violations() []Violation {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.undetected)
}

// runRot injects one rot fault on node e.Pick % n and undoes it by the
// runbook.
func (r *faultRunner) runRot(ctx context.Context, e FaultEvent) {
	i := e.Pick % r.n
	rec := FaultRecord{Kind: e.Kind, Nodes: []int{i}, StartNs: r.hist.Now()}
	r.log.Info("fault", "kind", e.Kind, "nodes", rec.Nodes)
	err := r.rot(context.WithoutCancel(ctx), e.Kind, i)
	rec.EndNs = r.hist.Now()
	if err != nil {
		rec.Error = err.Error()
		r.log.Warn("fault", "kind", e.Kind, "nodes", rec.Nodes, "err", err)
	} else {
		r.log.Info("rot detected and the node replaced", "kind", e.Kind, "node", i,
			"after", time.Duration(rec.EndNs-rec.StartNs).Round(time.Millisecond))
	}
	r.mu.Lock()
	r.records = append(r.records, rec)
	r.mu.Unlock()
}

func (r *faultRunner) rot(ctx context.Context, kind string, i int) error {
	rd, ok := r.d.(RotDriver)
	if !ok || r.mem == nil {
		return errors.New("the target's driver cannot damage files or replace members")
	}
	after, err := r.mem.finalize(ctx)
	if err != nil {
		return err
	}
	id := rd.NodeID(i)
	if err := rd.Stop(ctx, i, false); err != nil {
		return err
	}
	what, err := rd.Rot(ctx, i, kind, after)
	if errors.Is(err, localcluster.ErrNothingToRot) {
		// Nothing of the kind on this node yet (no post since its last
		// snapshot): not a fault, and nothing to check.
		return errors.Join(err, rd.Restart(ctx, i))
	}
	if err != nil {
		return errors.Join(err, rd.Restart(ctx, i))
	}
	r.log.Info("rot", "kind", kind, "node", i, "changed", what)
	if err := rd.Restart(ctx, i); err != nil {
		return err
	}
	code, tail, exited := rd.WaitExit(ctx, i, rotDetectTimeout)
	switch {
	case !exited:
		r.rots.mu.Lock()
		r.rots.undetected = append(r.rots.undetected, violation(VRotUndetected, "", i,
			"%s: node %s ran %s on damaged data (%s) without stopping", kind, id, rotDetectTimeout, what))
		r.rots.mu.Unlock()
		rd.Stop(ctx, i, false)
	case code == 0 || !strings.Contains(tail, rotStopLine):
		r.rots.mu.Lock()
		r.rots.undetected = append(r.rots.undetected, violation(VRotUndetected, "", i,
			"%s: node %s on damaged data (%s) exited with code %d without logging %q", kind, id, what, code, rotStopLine))
		r.rots.mu.Unlock()
	}
	// The runbook: remove it, wipe it, let it join again under a new id.
	if _, err := r.mem.inject(ctx, RemoveFollower, []int{i}); err != nil {
		return fmt.Errorf("runbook after %s on node %d: %w", kind, i, err)
	}
	return r.mem.undo(ctx, RemoveFollower)
}

// finalize raises the cluster to the newest cluster version every member
// knows, once — the checksums are on from cluster version 3 — and returns
// the log index the raise was applied at: what comes after it carries
// checksums.
func (m *members) finalize(ctx context.Context) (uint64, error) {
	m.mu.Lock()
	done, at := m.finalized, m.finalIndex
	m.mu.Unlock()
	if done {
		return at, nil
	}
	ctx, cancel := context.WithTimeout(ctx, memberTimeout)
	defer cancel()
	res, err := m.admin.FinalizeUpgrade(ctx)
	if err != nil {
		return 0, fmt.Errorf("finalizing the cluster version before a rot fault: %w", err)
	}
	m.mu.Lock()
	m.finalized, m.finalIndex = true, res.Status.AppliedIndex
	m.mu.Unlock()
	return res.Status.AppliedIndex, nil
}

// Rot implements RotDriver.
func (l *Local) Rot(_ context.Context, i int, kind string, after uint64) (string, error) {
	var rot localcluster.Rot
	var err error
	switch kind {
	case RotLog:
		rot, err = l.c.RotLog(i, rotMarker, after)
	case RotState:
		rot, err = l.c.RotState(i, rotMarker, after)
	default:
		return "", fmt.Errorf("chaos: %q is not a rot fault", kind)
	}
	return rot.String(), err
}

// WaitExit implements RotDriver.
func (l *Local) WaitExit(_ context.Context, i int, timeout time.Duration) (int, string, bool) {
	code, ok := l.c.WaitExit(i, timeout)
	if !ok {
		return 0, "", false
	}
	return code, l.c.LogTail(i, 64<<10), true
}
