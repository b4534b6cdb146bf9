package node

import (
	"context"
	"errors"

	"github.com/restarea/restarea/fsm"
)

// scrub runs the background scrub of the state file (fsm.Scrub) until the
// node stops: every value is read again at cfg.ScrubRate bytes per second
// at most, and a full pass starts at most once per cfg.ScrubInterval. A
// damaged value stops the state machine, and so the node (onHalt).
func (n *Node) scrub() {
	defer n.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-n.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := n.fsm.Scrub(ctx, fsm.ScrubOptions{
		Rate:  n.cfg.ScrubRate,
		Every: n.cfg.ScrubInterval,
		Checked: func(k int) {
			n.met.scrubChecked.Add(float64(k))
		},
		Passed: func(p fsm.ScrubPass) {
			n.met.scrubPasses.Inc()
			n.met.scrubLastPass.Set(float64(p.End.UnixNano()) / 1e9)
		},
	})
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, fsm.ErrCorrupt):
		// Stopped with the node, or it stopped the node (onHalt logs it).
	default:
		n.log.Error("the scrub of the state file stopped", "err", err.Error())
	}
}
