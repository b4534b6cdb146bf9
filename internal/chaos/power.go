package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ClassPowerCut is the power-cut fault class: a node's machine loses
// power — its file system (internal/powerfs) drops every write and name
// not yet fsynced, and its process dies — and comes back with a new boot
// id. Local targets whose nodes run on powerfs (--power-fs) support it.
const ClassPowerCut = "power-cut"

// Power-cut fault kinds: one node, a majority, or every node at once.
// Every acknowledged write was fsynced in the raft log of a majority, so
// none may be lost even when every node loses power together.
const (
	PowerCutOne      = "power-cut-one"
	PowerCutMajority = "power-cut-majority"
	PowerCutAll      = "power-cut-all"
)

// PowerDriver is a FaultDriver that can cut nodes' power and restore it.
type PowerDriver interface {
	// PowerCut cuts the power of the given nodes at once.
	PowerCut(ctx context.Context, nodes []int) error
	// PowerOn reboots node i's machine and starts the node again.
	PowerOn(ctx context.Context, i int) error
}

func powerKinds(classes []string, n int) []string {
	if !slices.Contains(classes, ClassPowerCut) {
		return nil
	}
	if n < 3 {
		return []string{PowerCutOne, PowerCutAll}
	}
	return []string{PowerCutOne, PowerCutMajority, PowerCutAll}
}

func isPowerCut(kind string) bool { return strings.HasPrefix(kind, "power-cut-") }

// powerTargets resolves the nodes a power cut hits: one node chosen by
// Pick (leader or not), a majority starting there, or all.
func powerTargets(e FaultEvent, n int) []int {
	size := 1
	switch e.Kind {
	case PowerCutMajority:
		size = n/2 + 1
	case PowerCutAll:
		size = n
	}
	out := make([]int, 0, size)
	for k := range size {
		out = append(out, (e.Pick+k)%n)
	}
	return out
}

func (r *faultRunner) powerDriver() (PowerDriver, error) {
	pd, ok := r.d.(PowerDriver)
	if !ok {
		return nil, fmt.Errorf("the fault driver cannot cut power")
	}
	return pd, nil
}

func (r *faultRunner) powerCut(ctx context.Context, nodes []int) error {
	pd, err := r.powerDriver()
	if err != nil {
		return err
	}
	return pd.PowerCut(ctx, nodes)
}

func (r *faultRunner) powerOn(ctx context.Context, nodes []int) error {
	pd, err := r.powerDriver()
	if err != nil {
		return err
	}
	for _, i := range nodes {
		err = errors.Join(err, pd.PowerOn(ctx, i))
	}
	return err
}

// PowerCut implements PowerDriver (the nodes run on powerfs).
func (l *Local) PowerCut(_ context.Context, nodes []int) error { return l.c.PowerCut(nodes) }

// PowerOn implements PowerDriver: the machine reboots (its file system is
// mounted again from what was synced, with a new boot id) and the node
// starts on it.
func (l *Local) PowerOn(_ context.Context, i int) error { return l.c.PowerOn(i) }
