package chaos

import (
	"context"
	"time"
)

// Target is a cluster a chaos run drives. The workload and the checker
// reach it only through its nodes' public HTTP API (REST, MCP, the
// cluster status and the admin API), so one run works against every kind
// of target.
type Target interface {
	// Name describes the target in the report, e.g. "local 3 nodes".
	Name() string
	// URLs returns the HTTP base URL of every node, by node index. Node
	// indexes never change during a run.
	URLs() []string
	// AdminToken returns the admin API bearer token; the checker needs it
	// to read each node's stored entries.
	AdminToken() string
	// Faults returns the fault driver, or nil when faults may not be
	// injected into this target.
	Faults() FaultDriver
	// Close stops what the target started (nothing, for a cluster someone
	// else runs).
	Close() error
}

// FaultDriver injects faults into the nodes of a target and undoes them.
// Each method acts on node indexes of Target.URLs and returns once the
// fault is in place (or undone).
type FaultDriver interface {
	// Kinds returns the fault classes this driver supports: a subset of
	// ClassKill, ClassPause, ClassPartition and ClassClock (a ClockDriver).
	Kinds() []string
	// Kill stops node i abruptly, as kill -9 would.
	Kill(ctx context.Context, i int) error
	// Restart starts a killed node i again on its data.
	Restart(ctx context.Context, i int) error
	// Pause freezes node i (SIGSTOP, docker pause); Resume thaws it.
	Pause(ctx context.Context, i int) error
	// Resume thaws a paused node i.
	Resume(ctx context.Context, i int) error
	// Isolate cuts the given nodes off from the others' raft and internal
	// traffic. Whether the isolated nodes still reach each other depends
	// on the target; either way they are a minority without quorum.
	Isolate(ctx context.Context, nodes []int) error
	// Heal removes every isolation.
	Heal(ctx context.Context) error
}

// GracefulRestarter is a FaultDriver that can also restart a node the
// way an operator does in a rolling restart: SIGTERM (the node hands
// leadership over and finishes the requests in flight), wait for the
// process to exit, start it again on the same data. RestartGracefully
// returns once the node was started again; the caller waits for its
// /readyz.
type GracefulRestarter interface {
	RestartGracefully(ctx context.Context, i int) error
}

// stopTimeout bounds a graceful stop: a node that has not exited by then
// is killed and the restart reported as failed.
const stopTimeout = 30 * time.Second

// Fault classes a driver may support.
const (
	ClassKill      = "kill"
	ClassPause     = "pause"
	ClassPartition = "partition"
)
