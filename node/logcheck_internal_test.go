package node

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// The checks of logcheck.go on a real raft-boltdb file: a command whose
// bytes rotted on disk is reported (raft.db, its index) by checkedLogs as
// raft reads it, still returned without an error (raft panics on a failed
// read at start and when applying), refused by the transport before it is
// sent, and found by checkLog; entries without a checksum pass.
func TestLogChecksFindADamagedCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	store, err := raftboltdb.NewBoltStore(path)
	if err != nil {
		t.Fatal(err)
	}
	canary := "a canary body that rots on this disk"
	post := func(body string) *fsm.Command {
		return &fsm.Command{Op: fsm.OpPost, Time: 1, Post: &fsm.PostCommand{
			Request: restarea.PostRequest{RequestID: "0192d6a4-7b8e-7c3e-9f00-0a1b2c3d4e5f", Type: "question", Title: "t", Body: body},
			NewID:   "0192d6a4-7b8e-7c3e-9f00-0a1b2c3d4e60"}}
	}
	summed, err := post("sound").EncodeSummed()
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := post("written before cluster version 3").EncodeV2()
	if err != nil {
		t.Fatal(err)
	}
	rotten, err := post(canary).EncodeSummed()
	if err != nil {
		t.Fatal(err)
	}
	entries := []*raft.Log{
		{Index: 1, Term: 1, Type: raft.LogNoop},
		{Index: 2, Term: 1, Type: raft.LogCommand, Data: summed},
		{Index: 3, Term: 1, Type: raft.LogCommand, Data: legacy},
		{Index: 4, Term: 1, Type: raft.LogCommand, Data: rotten},
	}
	if err := store.StoreLogs(entries); err != nil {
		t.Fatal(err)
	}
	store.Close()
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	damaged := []byte(canary)
	damaged[3] ^= 0x01
	if !bytes.Contains(file, []byte(canary)) {
		t.Fatal("the canary is not in raft.db")
	}
	if err := os.WriteFile(path, bytes.ReplaceAll(file, []byte(canary), damaged), 0o600); err != nil {
		t.Fatal(err)
	}
	if store, err = raftboltdb.NewBoltStore(path); err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	var reports []*fsm.CorruptError
	report := func(c *fsm.CorruptError) { reports = append(reports, c) }
	logs := checkedLogs{store, report}
	for i := uint64(1); i <= 3; i++ {
		var l raft.Log
		if err := logs.GetLog(i, &l); err != nil || len(reports) != 0 {
			t.Fatalf("entry %d: %v, reports %v", i, err, reports)
		}
	}
	var l raft.Log
	if err := logs.GetLog(4, &l); err != nil {
		t.Fatalf("GetLog of the damaged entry: %v, want the entry (raft panics on an error)", err)
	}
	if !bytes.Contains(l.Data, damaged) || len(reports) != 1 || reports[0].File != "raft.db" || reports[0].Index != 4 {
		t.Fatalf("damaged entry: reports %+v", reports)
	}
	if err := logs.GetLog(5, &l); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog past the end: %v, want the store's own ErrLogNotFound", err)
	}
	if logs.IsMonotonic() {
		t.Fatal("raft-boltdb is not a monotonic store; the wrapper must not say it is")
	}

	// The transport refuses to send it (a nil network transport would
	// panic if it tried), and sends nothing damaged even among sound ones.
	tr := raftTransport{damaged: report}
	var sound raft.Log
	if err := logs.GetLog(2, &sound); err != nil {
		t.Fatal(err)
	}
	err = tr.AppendEntries("f", "127.0.0.1:1", &raft.AppendEntriesRequest{Entries: []*raft.Log{&sound, &l}}, &raft.AppendEntriesResponse{})
	var ce *fsm.CorruptError
	if !errors.As(err, &ce) || ce.Index != 4 || len(reports) != 2 {
		t.Fatalf("AppendEntries with a damaged entry: %v, reports %d", err, len(reports))
	}

	if err := checkLog(store, 1, 3); err != nil {
		t.Fatalf("checkLog of sound entries: %v", err)
	}
	if err := checkLog(store, 1, 4); !errors.As(err, &ce) || ce.Index != 4 || ce.File != "raft.db" {
		t.Fatalf("checkLog: %v, want the damage at index 4", err)
	}
}
