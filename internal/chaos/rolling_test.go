package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/localcluster"
	"github.com/restarea/restarea/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// runLocal runs cfg against three node processes of the restarea binary
// for at most d, as runInProcess does in process, and returns the report
// and the cluster, its processes stopped (their log files remain). It
// skips with -short.
func runLocal(t *testing.T, d time.Duration, cfg Config) (*Report, *localcluster.Cluster) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts node processes; skipped with -short")
	}
	bin := testkit.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{Binary: bin, Nodes: 3, Dir: t.TempDir(), Args: LocalArgs, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	target := NewLocal(c)
	defer target.Close()
	cfg.OutDir, cfg.Logger = t.TempDir(), testLogger(t)
	rep, err := Run(ctx, target, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rep, c
}

// A rolling restart of three node processes under load: every node is
// stopped with SIGTERM and started again in turn, the leader hands
// leadership over (and says so in its log), clients see only answers,
// 503s and timeouts, and every acknowledged post is stored exactly once
// on every node, in a linearizable history.
func TestRollingRestartLocal(t *testing.T) {
	rep, c := runLocal(t, 2*time.Minute, Config{
		Workers: 6, Duration: 2 * time.Second, Seed: 5, RollingRestart: true, ProgressEvery: time.Second,
	})
	t.Logf("posts %v, restarts %d, leader changes %d, write unavailability %.0fms", rep.Posts, len(rep.Faults), rep.LeaderChanges, rep.WriteUnavailableMs)
	for _, v := range rep.Violations {
		t.Errorf("violation: %+v", v)
	}
	if rep.Linearizable != "yes" {
		t.Errorf("linearizable: %s", rep.Linearizable)
	}
	var restarted []int
	leaders := 0
	for _, f := range rep.Faults {
		restarted = append(restarted, f.Nodes...)
		if f.Kind == RestartLeader {
			leaders++
		}
		if f.Error != "" {
			t.Errorf("restart of node %v: %s", f.Nodes, f.Error)
		}
	}
	if !slices.Equal(restarted[:min(3, len(restarted))], []int{0, 1, 2}) || leaders == 0 {
		t.Errorf("restarted %v (%d of them leading), want every node in turn, the leader among them", restarted, leaders)
	}
	if rep.Acknowledged < 20 || rep.Posts[OutcomeUnexpected] != 0 {
		t.Errorf("workload: %d acknowledged, posts %v", rep.Acknowledged, rep.Posts)
	}
	if rep.WriteUnavailableMs <= 0 {
		t.Errorf("write unavailability %v ms", rep.WriteUnavailableMs)
	}

	// The leader's SIGTERM handed leadership over, visibly; raft's own
	// lines are in the node's JSON shape.
	handed, raftLines := 0, 0
	for _, n := range c.Nodes() {
		f, err := os.Open(n.LogFile)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			var m map[string]any
			if json.Unmarshal(line, &m) != nil {
				continue // the start banner
			}
			if _, ok := m["@level"]; ok {
				t.Errorf("%s: an hclog-shaped line: %s", n.ID, line)
			}
			if m["msg"] == "handed leadership over before stopping" {
				handed++
			}
			if m["component"] == "raft" && m["level"] != nil && m["time"] != nil {
				raftLines++
			}
		}
		f.Close()
	}
	if handed == 0 || raftLines == 0 {
		t.Errorf("%d hand-overs and %d raft lines in the node logs", handed, raftLines)
	}
	if !strings.Contains(rep.WriteUnavailableAt, "s") {
		t.Errorf("write unavailability at %q", rep.WriteUnavailableAt)
	}
}

// The write gap runs between the answers of successful posts, from the
// first call to the last; failed posts and reads do not end it.
func TestWriteGap(t *testing.T) {
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	ops := []Op{
		{Kind: OpPost, CallNs: ms(0), ReturnNs: ms(5), Outcome: OutcomeCreated},
		{Kind: OpPost, CallNs: ms(6), ReturnNs: ms(10), Outcome: OutcomeUnavailable},
		{Kind: OpRead, CallNs: ms(7), ReturnNs: ms(9), Outcome: OutcomeFound},
		{Kind: OpPost, CallNs: ms(8), ReturnNs: ms(300), Outcome: OutcomeReplayed},
		{Kind: OpPost, CallNs: ms(301), ReturnNs: ms(320), Outcome: OutcomeCreated},
		{Kind: OpPost, CallNs: ms(330), ReturnNs: ms(331), Outcome: OutcomeFailed},
	}
	if gap, at := writeGap(ops); gap != 295*time.Millisecond || at != 5*time.Millisecond {
		t.Errorf("gap %v at %v, want 295ms at 5ms", gap, at)
	}
	// Writes that never come back count up to the last call.
	ops = append(ops, Op{Kind: OpPost, CallNs: ms(900), ReturnNs: ms(901), Outcome: OutcomeTimeout})
	if gap, at := writeGap(ops); gap != 580*time.Millisecond || at != 320*time.Millisecond {
		t.Errorf("gap %v at %v, want 580ms at 320ms", gap, at)
	}
	if gap, _ := writeGap(nil); gap != 0 {
		t.Errorf("empty history: gap %v", gap)
	}
}

// A connection error is allowed only on a node while it restarts; a 5xx
// other than 503 never; a failed restart is a violation.
func TestCheckRolling(t *testing.T) {
	restarts := []FaultRecord{{Kind: RestartFollower, Nodes: []int{1}, StartNs: 100, EndNs: 200}}
	ops := []Op{
		{Kind: OpPost, Node: 1, CallNs: 90, ReturnNs: 110, Outcome: OutcomeFailed, Error: "connection refused"},
		{Kind: OpPost, Node: 0, CallNs: 150, ReturnNs: 160, Outcome: OutcomeUnavailable, Status: 503},
		{Kind: OpPost, Node: 0, CallNs: 150, ReturnNs: 160, Outcome: OutcomeFailed, Error: "connection reset"},
		{Kind: OpPost, Node: 1, CallNs: 150, ReturnNs: 160, Outcome: OutcomeFailed, Status: 500},
		{Kind: OpRead, Node: 1, CallNs: 250, ReturnNs: 260, Outcome: OutcomeFailed, Error: "EOF"},
	}
	vs := checkRolling(ops, restarts)
	if len(vs) != 3 {
		t.Fatalf("%d violations, want 3: %+v", len(vs), vs)
	}
	for i, want := range []int{0, 1, 1} {
		if vs[i].Kind != VNotRetryable || *vs[i].Node != want {
			t.Errorf("violation %d: %+v, want node %d", i, vs[i], want)
		}
	}
	restarts[0].Error = "did not exit"
	if vs := checkRolling(nil, restarts); len(vs) != 1 || vs[0].Kind != VRestartFailed {
		t.Errorf("failed restart: %+v", vs)
	}
}

// The in-process target restarts gracefully too (node.Close, which hands
// leadership over, then a start on the same data directory).
func TestRollingRestartInProcess(t *testing.T) {
	rep := runInProcess(t, fsm.NoFault, Config{Workers: 4, Duration: time.Second, Seed: 2, RollingRestart: true})
	for _, v := range rep.Violations {
		t.Errorf("violation: %+v", v)
	}
	if len(rep.Faults) != 3 || rep.Acknowledged < 10 || rep.Linearizable != "yes" {
		t.Errorf("%d restarts, %d acknowledged, linearizable %s", len(rep.Faults), rep.Acknowledged, rep.Linearizable)
	}
}

// An MCP request the public port refused (429, 503) is an answer to retry,
// though the SDK reports it only as a transport error.
func TestRefusedStatus(t *testing.T) {
	for msg, want := range map[string]int{
		`calling "tools/call": rejected by transport: sending "tools/call": Too Many Requests`:   http.StatusTooManyRequests,
		`calling "initialize": rejected by transport: sending "initialize": Service Unavailable`: http.StatusServiceUnavailable,
		`calling "tools/call": connection refused`:                                               0,
	} {
		if got := refusedStatus(errors.New(msg)); got != want {
			t.Errorf("%q: %d, want %d", msg, got, want)
		}
	}
}
