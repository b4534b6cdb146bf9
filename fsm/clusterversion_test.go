package fsm_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// The cluster version starts at 1, rises one step per command, ignores a
// command that does not raise it (a resent one) and refuses a skip or a
// missing target without changing anything; the raise survives a reopen
// and is what ReadClusterVersion reads, read-only.
func TestClusterVersionRisesOneStepAtATime(t *testing.T) {
	h := newHarness(t)
	if got := h.f.ClusterVersion(); got != 1 {
		t.Fatalf("fresh state file: cluster version %d, want 1", got)
	}
	if r := h.apply(fsm.Command{Op: fsm.OpClusterVersion, ClusterVersion: 3}); r.Err == nil || r.Err.Code != restarea.CodeInvalidRequest {
		t.Fatalf("skip from 1 to 3: %+v, want invalid_request", r.Err)
	}
	if r := h.apply(fsm.Command{Op: fsm.OpClusterVersion}); r.Err == nil {
		t.Fatal("a cluster version command without a target was applied")
	}
	if got := h.f.ClusterVersion(); got != 1 {
		t.Fatalf("after refusals: cluster version %d, want 1", got)
	}
	if r := h.apply(fsm.Command{Op: fsm.OpClusterVersion, ClusterVersion: 2}); r.Err != nil {
		t.Fatalf("raise to 2: %+v", r.Err)
	}
	if r := h.apply(fsm.Command{Op: fsm.OpClusterVersion, ClusterVersion: 2}); r.Err != nil || r.Audit != nil {
		t.Fatalf("the same raise again: %+v, want a no-op", r)
	}
	if r := h.apply(fsm.Command{Op: fsm.OpClusterVersion, ClusterVersion: 1}); r.Err != nil {
		t.Fatalf("a lower target: %+v, want a no-op", r.Err)
	}
	if got := h.f.ClusterVersion(); got != 2 {
		t.Fatalf("cluster version %d, want 2", got)
	}
	h.f.Close()
	if v, err := fsm.ReadClusterVersion(h.path); err != nil || v != 2 {
		t.Fatalf("ReadClusterVersion = %d, %v; want 2", v, err)
	}
	h.f = openFSM(t, h.path)
	if got := h.f.ClusterVersion(); got != 2 {
		t.Fatalf("reopened: cluster version %d, want 2", got)
	}
	if v, err := fsm.ReadClusterVersion(filepath.Join(t.TempDir(), "state.db")); v != 1 || !errors.Is(err, fsm.ErrNoStateFile) {
		t.Fatalf("no state file: %d, %v; want 1, ErrNoStateFile", v, err)
	}
}

// A raise is an operator action: once the cluster audits it writes one
// record with the change, the command's index and its origin.
func TestClusterVersionIsAudited(t *testing.T) {
	h := auditHarness(t)
	r := h.apply(fsm.Command{Op: fsm.OpClusterVersion, ClusterVersion: 2, Origin: "192.0.2.7"})
	if r.Err != nil || r.Audit == nil {
		t.Fatalf("raise: %+v", r)
	}
	want := restarea.AuditRecord{Seq: h.index, Action: restarea.AuditClusterVersion, Source: "192.0.2.7",
		Changes: changes("cluster_version", 1, 2)}
	got := auditTrail(t, h.f, 10)[0]
	got.Time = want.Time
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("audit record %+v, want %+v", got, want)
	}
	if r := h.apply(fsm.Command{Op: fsm.OpClusterVersion, ClusterVersion: 2}); r.Audit != nil {
		t.Fatalf("a raise that changed nothing was audited: %+v", r.Audit)
	}
}

// The command goes through every log encoding to the same command: JSON
// (format 1) and the version 2 entry, which carries it as JSON.
func TestClusterVersionEncodings(t *testing.T) {
	c := fsm.Command{Op: fsm.OpClusterVersion, Time: 5, ClusterVersion: 2}
	v1, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	v2, err := c.EncodeV2()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{v1, v2} {
		got, err := fsm.DecodeCommand(b)
		if err != nil || !reflect.DeepEqual(*got, c) {
			t.Fatalf("decode %q: %+v, %v; want %+v", b, got, err, c)
		}
	}
}

// Two state machines applying the same log end with the same results,
// the same cluster version and the same audit trail.
func TestClusterVersionIsDeterministic(t *testing.T) {
	cmds := []fsm.Command{
		{Op: fsm.OpEnableLogV3},
		{Op: fsm.OpClusterVersion, ClusterVersion: 3},
		{Op: fsm.OpClusterVersion, ClusterVersion: 2, Origin: "198.51.100.1"},
		{Op: fsm.OpClusterVersion, ClusterVersion: 2},
	}
	var results [2][]byte
	var trails [2][]byte
	for i := range 2 {
		h := newHarness(t)
		rs := h.batch(cmds...)
		results[i], _ = json.Marshal(rs)
		trails[i], _ = json.Marshal(auditTrail(t, h.f, 10))
		if got := h.f.ClusterVersion(); got != 2 {
			t.Fatalf("run %d: cluster version %d, want 2", i, got)
		}
	}
	if !bytes.Equal(results[0], results[1]) || !bytes.Equal(trails[0], trails[1]) {
		t.Fatalf("two runs differ:\n%s\n%s\n%s\n%s", results[0], results[1], trails[0], trails[1])
	}
}

// A raise past what the binary knows stops the state machine at that
// entry: what came before it in the batch is applied and committed, the
// entry and everything after it are not (now or in later batches), and
// OnHalt is told once, naming both versions. A binary that knows the
// version, opened on the same file, applies the rest.
func TestClusterVersionAboveMaxStopsApplying(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	var mu sync.Mutex
	var halts []error
	// A binary that knows up to version 2 (the release before checksums).
	f, err := fsm.Open(path, fsm.Options{ClusterVersionMax: 2, OnHalt: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		halts = append(halts, err)
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, path: path, f: f, now: t0}
	before := h.batch(postCmd(question(t, "before the raise"), "192.0.2.1", "a1"),
		fsm.Command{Op: fsm.OpClusterVersion, ClusterVersion: 2})
	for _, r := range before {
		if r.Err != nil {
			t.Fatalf("before the raise: %+v", r.Err)
		}
	}
	raiseAt := h.index + 1
	logs := []*raft.Log{
		{Index: raiseAt, Type: raft.LogCommand, Data: h.encode(fsm.Command{Op: fsm.OpClusterVersion, ClusterVersion: 3})},
		{Index: raiseAt + 1, Type: raft.LogCommand, Data: h.encode(postCmd(question(t, "after the raise"), "192.0.2.1", "a2"))},
	}
	pre := &raft.Log{Index: raiseAt - 1, Type: raft.LogNoop}
	h.index = raiseAt + 1
	out := f.ApplyBatch(append([]*raft.Log{pre}, logs...))
	for i, o := range out {
		if o != nil {
			t.Fatalf("result %d of the halted batch: %+v, want nil", i, o)
		}
	}
	var e *fsm.UnknownClusterVersionError
	if err := f.Halted(); !errors.As(err, &e) || e.Version != 3 || e.Max != 2 || e.Index != raiseAt {
		t.Fatalf("Halted() = %v, want version 3 above max 2 at %d", err, raiseAt)
	}
	if got := f.AppliedIndex(); got != raiseAt-1 {
		t.Fatalf("applied index %d, want %d (the no-op before the raise)", got, raiseAt-1)
	}
	if out := f.ApplyBatch(logs[1:]); out[0] != nil || f.AppliedIndex() != raiseAt-1 {
		t.Fatalf("a batch after the stop was applied: %+v, applied %d", out, f.AppliedIndex())
	}
	mu.Lock()
	if len(halts) != 1 {
		t.Fatalf("OnHalt called %d times, want once", len(halts))
	}
	mu.Unlock()
	if f.ClusterVersion() != 2 || h.count() != 1 {
		t.Fatalf("after the stop: cluster version %d, %d entries; want 2, 1", f.ClusterVersion(), h.count())
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	g, err := fsm.Open(path, fsm.Options{ClusterVersionMax: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if g.AppliedIndex() != raiseAt-1 {
		t.Fatalf("reopened: applied %d, want %d", g.AppliedIndex(), raiseAt-1)
	}
	for i, o := range g.ApplyBatch(logs) {
		if r := asResult(t, o); r.Err != nil {
			t.Fatalf("newer binary, entry %d: %+v", i, r.Err)
		}
	}
	h.f = g
	if g.ClusterVersion() != 3 || h.count() != 2 {
		t.Fatalf("newer binary: cluster version %d, %d entries; want 3, 2", g.ClusterVersion(), h.count())
	}
}

// A snapshot at a cluster version the binary does not know is refused:
// installing it would leave the node applying rules it does not have.
func TestRestoreRefusesUnknownClusterVersion(t *testing.T) {
	newer, err := fsm.Open(filepath.Join(t.TempDir(), "state.db"), fsm.Options{ClusterVersionMax: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer newer.Close()
	hn := &harness{t: t, f: newer, now: t0}
	hn.batch(fsm.Command{Op: fsm.OpClusterVersion, ClusterVersion: 2}, fsm.Command{Op: fsm.OpClusterVersion, ClusterVersion: 3})
	snap := snapshotBytes(t, newer)

	halted := make(chan error, 1)
	path := filepath.Join(t.TempDir(), "state.db")
	old, err := fsm.Open(path, fsm.Options{ClusterVersionMax: 2, OnHalt: func(err error) { halted <- err }})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	err = old.Restore(io.NopCloser(bytes.NewReader(snap)))
	var e *fsm.UnknownClusterVersionError
	if !errors.As(err, &e) || e.Version != 3 || e.Max != 2 {
		t.Fatalf("Restore = %v, want a refusal of cluster version 3", err)
	}
	if err := <-halted; err == nil || old.ClusterVersion() != 1 {
		t.Fatalf("after the refused restore: halt %v, cluster version %d", err, old.ClusterVersion())
	}
}

// A state is fresh (a new cluster's first leader may raise its version)
// until a leader configures it or an entry is stored; member records and
// a raise begun by a leader that lost its leadership do not end it.
func TestFresh(t *testing.T) {
	fresh := func(h *harness, want bool, what string) {
		t.Helper()
		if got, err := h.f.Fresh(); err != nil || got != want {
			t.Fatalf("%s: fresh %v, %v; want %v", what, got, err, want)
		}
	}
	h := newHarness(t)
	fresh(h, true, "a new state")
	h.apply(fsm.Command{Op: fsm.OpMember, Member: &fsm.MemberCommand{MemberInfo: fsm.MemberInfo{ID: "n2", URL: "http://127.0.0.1:1"}}})
	fresh(h, true, "a member announced")
	h.apply(fsm.Command{Op: fsm.OpClusterVersion, ClusterVersion: 2})
	fresh(h, true, "raised to 2")
	per, glob := restarea.Limit{Count: 10, WindowSeconds: 60}, restarea.Limit{Count: 100, WindowSeconds: 3600}
	h.apply(fsm.Command{Op: fsm.OpConfigure, Settings: &fsm.SettingsCommand{FromConfig: true,
		Patch: restarea.SettingsPatch{PerSourceLimit: &per, GlobalLimit: &glob}}})
	fresh(h, false, "configured")

	h = newHarness(t)
	if r := h.post(question(t, "first"), "s", "a"); r.Err != nil {
		t.Fatal(r.Err)
	}
	fresh(h, false, "an entry stored")
}
