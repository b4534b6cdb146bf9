package chaos

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/restarea/restarea/fsm"
)

// testLogger shows the run's progress with -v.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}

// runInProcess starts a three-node in-process cluster with fault, runs
// cfg against it and returns the report.
func runInProcess(t *testing.T, fault fsm.Fault, cfg Config) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	target, err := StartInProcess(ctx, InProcessOptions{Nodes: 3, Dir: t.TempDir(), FSMFault: fault})
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	cfg.OutDir, cfg.Logger, cfg.ProgressEvery = t.TempDir(), testLogger(t), time.Second
	rep, err := Run(ctx, target, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("posts %v, reads %v, faults %d, leader changes %d, violations %d",
		rep.Posts, rep.Reads, len(rep.Faults), rep.LeaderChanges, len(rep.Violations))
	return rep
}

// A short chaos run against a correct build: faults are injected, many
// posts are acknowledged, and the checker finds nothing.
func TestInProcessRunHasNoViolations(t *testing.T) {
	rep := runInProcess(t, fsm.NoFault, Config{Workers: 6, Duration: 5 * time.Second, Seed: 3})
	for _, v := range rep.Violations {
		t.Errorf("violation: %+v", v)
	}
	if len(rep.Faults) == 0 {
		t.Errorf("no fault was injected")
	}
	if rep.Acknowledged < 20 || rep.Posts[OutcomeReplayed] == 0 || rep.Posts[OutcomeConflict] == 0 {
		t.Errorf("workload too thin: %d acknowledged, posts %v", rep.Acknowledged, rep.Posts)
	}
	if rep.Linearizable != "yes" {
		t.Errorf("linearizable: %s", rep.Linearizable)
	}
}

// wantCaught checks that a run against a broken state machine reports
// the expected violation and leaves the evidence behind.
func wantCaught(t *testing.T, rep *Report, kind string) {
	t.Helper()
	if rep.OK() {
		t.Fatal("the checker found nothing wrong with a broken state machine")
	}
	found := false
	for _, v := range rep.Violations {
		found = found || v.Kind == kind
	}
	if !found {
		t.Errorf("no %s among %d violations: %+v", kind, len(rep.Violations), rep.Violations[0])
	}
	for _, f := range []string{rep.HistoryFile, rep.VisualizationFile} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("evidence %q missing: %v", f, err)
		}
	}
	if ops, err := readHistoryFile(rep.HistoryFile); err != nil || len(ops) != rep.Ops {
		t.Errorf("history file: %d ops (%v), report says %d", len(ops), err, rep.Ops)
	}
}

func readHistoryFile(path string) ([]Op, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadHistory(f)
}

// A state machine that stores replays as new entries is caught: two
// entries for one request_id, two 201s, a history no order explains.
func TestCheckerCatchesReplaysCreate(t *testing.T) {
	rep := runInProcess(t, fsm.FaultReplaysCreate, Config{Workers: 4, Duration: 2 * time.Second, NoFaults: true})
	wantCaught(t, rep, VDuplicateStored)
	wantCaught(t, rep, VNotLinearizable)
}

// A state machine that acknowledges writes without storing them is
// caught: acknowledged entries are missing and unreadable.
func TestCheckerCatchesForgetWrites(t *testing.T) {
	rep := runInProcess(t, fsm.FaultForgetWrites, Config{Workers: 4, Duration: 2 * time.Second, NoFaults: true})
	wantCaught(t, rep, VLostWrite)
	wantCaught(t, rep, VUnreadable)
}
