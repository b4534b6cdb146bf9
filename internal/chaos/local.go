package chaos

import (
	"context"
	"fmt"

	"github.com/restarea/restarea/internal/localcluster"
)

// LocalArgs are the `restarea serve` flags the chaos command gives local
// node processes: limits high enough that 429 answers stay rare.
// Expiry runs every second, so that a clock fault that let the board's
// clock jump would expire entries within the fault. Each is one
// "--name=value" argument, as localcluster.Options.Args asks.
var LocalArgs = []string{"--rate-per-source=1000000/m", "--rate-global=1000000/h", "--expire-interval=1s"}

// Local is a Target of node processes on loopback, started and faulted
// through package localcluster: kill -9 and restart, SIGSTOP and SIGCONT,
// and partitions by the fault proxy in front of each raft port.
type Local struct {
	c    *localcluster.Cluster
	urls []string
}

var (
	_ Target            = (*Local)(nil)
	_ FaultDriver       = (*Local)(nil)
	_ GracefulRestarter = (*Local)(nil)
	_ RotDriver         = (*Local)(nil)
)

// NewLocal wraps a running local cluster; Close closes it.
func NewLocal(c *localcluster.Cluster) *Local {
	l := &Local{c: c}
	for _, n := range c.Nodes() {
		l.urls = append(l.urls, n.URL)
	}
	return l
}

// Name implements Target.
func (l *Local) Name() string { return fmt.Sprintf("local %d nodes", len(l.urls)) }

// URLs implements Target.
func (l *Local) URLs() []string { return l.urls }

// AdminToken implements Target.
func (l *Local) AdminToken() string { return l.c.AdminToken() }

// Faults implements Target.
func (l *Local) Faults() FaultDriver { return l }

// Kinds implements FaultDriver: kill, pause, partition, membership and
// rot, and
// clock steps when the nodes run with a test clock
// (localcluster.Options.TestClock).
func (l *Local) Kinds() []string {
	kinds := []string{ClassKill, ClassPause, ClassPartition, ClassMembership, ClassRot}
	if l.c.TestClock() {
		kinds = append(kinds, ClassClock)
	}
	if l.c.PowerFS() {
		kinds = append(kinds, ClassPowerCut)
	}
	return kinds
}

// Kill implements FaultDriver with SIGKILL.
func (l *Local) Kill(_ context.Context, i int) error { return l.c.Kill(i) }

// Restart implements FaultDriver: the process starts again on its data
// directory and addresses.
func (l *Local) Restart(_ context.Context, i int) error {
	if l.c.Running(i) {
		return nil
	}
	return l.c.Restart(i)
}

// RestartGracefully implements GracefulRestarter: SIGTERM, wait for the
// exit, start again on the same data directory and addresses.
func (l *Local) RestartGracefully(_ context.Context, i int) error {
	return l.c.RestartGracefully(i, stopTimeout)
}

// Cluster returns the local cluster (its nodes' log files, for tests).
func (l *Local) Cluster() *localcluster.Cluster { return l.c }

// Pause implements FaultDriver with SIGSTOP.
func (l *Local) Pause(_ context.Context, i int) error { return l.c.Pause(i) }

// Resume implements FaultDriver with SIGCONT.
func (l *Local) Resume(_ context.Context, i int) error { return l.c.Resume(i) }

// Isolate implements FaultDriver: the nodes form one group, the others
// another; the fault proxies refuse traffic between the groups.
func (l *Local) Isolate(_ context.Context, nodes []int) error {
	l.c.Partition(nodes)
	return nil
}

// Heal implements FaultDriver.
func (l *Local) Heal(context.Context) error {
	l.c.Heal()
	return nil
}

// Close stops the node processes.
func (l *Local) Close() error { return l.c.Close() }

var _ MemberDriver = (*Local)(nil)

// Stop implements MemberDriver: SIGTERM and a wait for the exit, or
// SIGKILL.
func (l *Local) Stop(_ context.Context, i int, graceful bool) error {
	if graceful {
		return l.c.Stop(i, stopTimeout)
	}
	return l.c.Kill(i)
}

// Wipe implements MemberDriver: the data directory is emptied.
func (l *Local) Wipe(_ context.Context, i int) error { return l.c.Wipe(i) }

// StartAs implements MemberDriver: the node starts under id on its
// addresses and joins through --join.
func (l *Local) StartAs(_ context.Context, i int, id string) error { return l.c.StartAs(i, id) }

// AddNode implements MemberDriver: one more node process, with its own
// loopback address and fault proxy, joins through --join.
func (l *Local) AddNode(context.Context) (int, string, string, error) {
	i, err := l.c.AddNode()
	if err != nil {
		return -1, "", "", err
	}
	n := l.c.Nodes()[i]
	return i, n.ID, n.URL, nil
}

// SetOut implements MemberDriver.
func (l *Local) SetOut(i int) { l.c.SetOut(i) }

// NodeID implements MemberDriver.
func (l *Local) NodeID(i int) string { return l.c.Nodes()[i].ID }

var _ Upgrader = (*Local)(nil)

// Replace implements Upgrader: SIGTERM and a wait for the exit, then
// binary on the node's data directory, id and addresses, with the flags
// binary knows.
func (l *Local) Replace(_ context.Context, i int, binary string) (string, error) {
	b, err := l.c.SetBinary(i, binary)
	if err != nil {
		return "", err
	}
	return b.Version, l.c.RestartGracefully(i, stopTimeout)
}

// Version implements Upgrader.
func (l *Local) Version(binary string) (string, error) {
	b, err := l.c.Inspect(binary)
	return b.Version, err
}
