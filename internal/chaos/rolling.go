package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Kinds of the fault records of a rolling restart: the node restarted
// was the leader, or a follower, when its restart began.
const (
	RestartLeader   = "restart-leader"
	RestartFollower = "restart-follower"
)

// Pacing of a rolling restart.
const (
	// rollingWarmup passes before the first restart, so the workload runs
	// against a whole cluster first.
	rollingWarmup = time.Second
	// rollingGap separates one node's readiness from the next node's
	// restart, so the write gaps of two restarts do not merge.
	rollingGap = time.Second
	// readyTimeout bounds the wait for a restarted node's /readyz.
	readyTimeout = time.Minute
	// maxRollingRounds bounds the rounds of one run.
	maxRollingRounds = 1000
)

// rolling restarts every node gracefully, one at a time in index order,
// waiting for the restarted node's /readyz before the next. It does
// rounds until the run's planned duration has passed (at least one; a
// round begun is finished) and returns an error, ending the rolling
// restart, when a node did not stop cleanly or did not come back ready:
// restarting another one then could take the quorum away.
func (r *faultRunner) rolling(ctx context.Context, g GracefulRestarter, hc *http.Client, urls []string, duration time.Duration) error {
	if !sleep(ctx, rollingWarmup) {
		return nil
	}
	for round := 0; round < maxRollingRounds && (round == 0 || time.Duration(r.hist.Now()) < duration); round++ {
		for i := range urls {
			if ctx.Err() != nil {
				return nil
			}
			if err := r.restartOne(ctx, g, hc, urls[i], i); err != nil {
				return err
			}
			if !sleep(ctx, rollingGap) {
				return nil
			}
		}
		r.log.Info("rolling restart round done", "round", round+1)
	}
	return nil
}

// restartOne restarts node i and waits for its /readyz, recording the
// restart from the moment it began to the moment the node was ready.
func (r *faultRunner) restartOne(ctx context.Context, g GracefulRestarter, hc *http.Client, url string, i int) error {
	r.mon.observe(ctx)
	kind := RestartFollower
	if r.mon.leaderIndex() == i {
		kind = RestartLeader
	}
	rec := FaultRecord{Kind: kind, Nodes: []int{i}, StartNs: r.hist.Now()}
	r.log.Info("rolling restart", "node", i, "kind", kind)
	// The restart and the wait happen even when ctx ends meanwhile: a node
	// left down would fail the check for the wrong reason.
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout+readyTimeout)
	defer cancel()
	err := g.RestartGracefully(uctx, i)
	if err == nil {
		err = waitReady(uctx, hc, url)
	}
	rec.EndNs = r.hist.Now()
	if err != nil {
		rec.Error = err.Error()
		r.log.Warn("rolling restart", "node", i, "err", err)
	} else {
		r.log.Info("restarted node ready", "node", i, "after", time.Duration(rec.EndNs-rec.StartNs).Round(time.Millisecond))
	}
	r.mu.Lock()
	r.records = append(r.records, rec)
	r.mu.Unlock()
	if err != nil {
		return fmt.Errorf("node %d: %w", i, err)
	}
	return nil
}

// waitReady polls url's /readyz until it answers 200.
func waitReady(ctx context.Context, hc *http.Client, url string) error {
	last := errors.New("not asked")
	for range maxPolls {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		req, err := http.NewRequestWithContext(cctx, http.MethodGet, url+"/readyz", nil)
		if err != nil {
			cancel()
			return err
		}
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				cancel()
				return nil
			}
			err = fmt.Errorf("/readyz answered %s", resp.Status)
		}
		cancel()
		last = err
		if !sleep(ctx, 50*time.Millisecond) {
			break
		}
	}
	return fmt.Errorf("not ready within %s: %v", readyTimeout, last)
}

// VNotRetryable is the violation of a rolling restart's promise that
// clients see only answers, 503s and timeouts: a call got a 5xx other
// than 503, or could not reach a node that was not being restarted.
const VNotRetryable = "not_retryable"

// VRestartFailed says a node did not stop cleanly on SIGTERM or did not
// come back ready in a rolling restart.
const VRestartFailed = "restart_failed"

// checkRolling checks the calls of a rolling restart: a connection error
// is allowed only on a node while it restarts (its process is down), and
// no node may answer a 5xx but 503.
func checkRolling(ops []Op, restarts []FaultRecord) []Violation {
	var vs []Violation
	for _, f := range restarts {
		if f.Error != "" {
			vs = append(vs, violation(VRestartFailed, "", f.Nodes[0], "%s", f.Error))
		}
	}
	restarting := func(node int, from, to int64) bool {
		for _, f := range restarts {
			if f.Nodes[0] == node && from <= f.EndNs && to >= f.StartNs {
				return true
			}
		}
		return false
	}
	for _, op := range ops {
		if op.Outcome != OutcomeFailed {
			continue
		}
		switch {
		case op.Status != 0:
			vs = append(vs, violation(VNotRetryable, op.RequestID, op.Node, "%s over %s answered %d during a rolling restart: %s", op.Kind, op.Channel, op.Status, op.Error))
		case !restarting(op.Node, op.CallNs, op.ReturnNs):
			vs = append(vs, violation(VNotRetryable, op.RequestID, op.Node, "%s over %s failed while the node was not restarting: %s", op.Kind, op.Channel, op.Error))
		}
	}
	return vs
}
