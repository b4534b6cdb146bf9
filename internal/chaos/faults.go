package chaos

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// undoTimeout bounds the undoing of one fault (a restart, a resume, a
// heal), which happens even after the run's context ended.
const undoTimeout = time.Minute

// FaultRecord is a fault that was injected: when (nanoseconds on the
// history's clock), what, on which nodes, and what went wrong injecting
// or undoing it.
type FaultRecord struct {
	Kind    string `json:"kind"`
	Nodes   []int  `json:"nodes"`
	StartNs int64  `json:"start_ns"`
	EndNs   int64  `json:"end_ns"`
	Error   string `json:"error,omitempty"`
}

// faultRunner carries out a schedule against a driver.
type faultRunner struct {
	d    FaultDriver
	mon  *monitor
	n    int
	hist *History
	log  *slog.Logger
	// mem carries out the membership faults and the rot faults' runbook;
	// nil when the run has neither.
	mem *members
	// rots collects the rot faults' findings; nil when the run has none.
	rots *rots

	mu      sync.Mutex
	records []FaultRecord
}

// run injects each event at its time, holds it and undoes it, one at a
// time. When ctx ends it undoes the fault in force and returns, so the
// cluster is whole again afterwards.
func (r *faultRunner) run(ctx context.Context, events []FaultEvent) {
	if r.rots != nil && r.mem != nil {
		// Checksums on from the start, so that the workload writes values
		// that carry them before the first rot fault.
		if _, err := r.mem.finalize(ctx); err != nil {
			r.log.Warn("finalizing the cluster version for the rot faults", "err", err)
		}
	}
	for _, e := range events {
		if wait := time.Duration(int64(e.At) - r.hist.Now()); wait > 0 && !sleep(ctx, wait) {
			return
		}
		if ctx.Err() != nil {
			return
		}
		r.mon.observe(ctx)
		if isMembership(e.Kind) {
			r.runMember(ctx, e)
			continue
		}
		if isRot(e.Kind) {
			r.runRot(ctx, e)
			continue
		}
		nodes := e.targets(r.n, r.mon.leaderIndex())
		rec := FaultRecord{Kind: e.Kind, Nodes: nodes, StartNs: r.hist.Now()}
		r.log.Info("fault", "kind", e.Kind, "nodes", nodes, "hold", e.Hold)
		err := r.inject(ctx, e.Kind, nodes)
		if err == nil {
			sleep(ctx, e.Hold)
		}
		uctx, cancel := context.WithTimeout(context.Background(), undoTimeout)
		err = errors.Join(err, r.undo(uctx, e.Kind, nodes))
		cancel()
		rec.EndNs = r.hist.Now()
		if err != nil {
			rec.Error = err.Error()
			r.log.Warn("fault", "kind", e.Kind, "nodes", nodes, "err", err)
		}
		r.mu.Lock()
		r.records = append(r.records, rec)
		r.mu.Unlock()
	}
}

func (r *faultRunner) inject(ctx context.Context, kind string, nodes []int) error {
	var err error
	switch {
	case isClockFault(kind):
		err = r.stepClocks(ctx, nodes, ClockStep)
	case isPowerCut(kind):
		err = r.powerCut(ctx, nodes)
	case strings.HasPrefix(kind, "kill-"):
		for _, i := range nodes {
			err = errors.Join(err, r.d.Kill(ctx, i))
		}
	case strings.HasPrefix(kind, "pause-"):
		for _, i := range nodes {
			err = errors.Join(err, r.d.Pause(ctx, i))
		}
	default:
		err = r.d.Isolate(ctx, nodes)
	}
	return err
}

func (r *faultRunner) undo(ctx context.Context, kind string, nodes []int) error {
	var err error
	switch {
	case isClockFault(kind):
		err = r.stepClocks(ctx, nodes, 0)
	case isPowerCut(kind):
		err = r.powerOn(ctx, nodes)
	case strings.HasPrefix(kind, "kill-"):
		for _, i := range nodes {
			err = errors.Join(err, r.d.Restart(ctx, i))
		}
	case strings.HasPrefix(kind, "pause-"):
		for _, i := range nodes {
			err = errors.Join(err, r.d.Resume(ctx, i))
		}
	default:
		err = r.d.Heal(ctx)
	}
	return err
}

// done returns the faults injected so far.
func (r *faultRunner) done() []FaultRecord {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]FaultRecord(nil), r.records...)
}
