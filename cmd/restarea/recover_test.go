package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// `restarea recover` as the runbook runs it on the survivor of a lost
// majority: --inspect, a dry run that changes nothing, --yes, then serve:
// the node answers alone, and a replay of a post it held is a replay.
func TestRecoverCommand(t *testing.T) {
	nodes := testnode.StartCluster(t, 3)
	req := testkit.Question("held by the survivor")
	first := testnode.Post(t, nodes[0], req)
	survivor := nodes[2]
	testkit.Eventually(t, 30*time.Second, "the survivor to hold the post", func() error {
		_, err := survivor.GetThread(t.Context(), first.Entry.ID, restarea.ReadOptions{})
		return err
	})
	dir := survivor.DataDir()
	for _, n := range nodes {
		n.Close()
	}

	code, out, errOut := run(t, "recover", "--data-dir", dir, "--inspect")
	if code != 0 || !strings.Contains(out, "node:           "+survivor.ID()) || strings.Count(out, " voter ") != 3 {
		t.Fatalf("recover --inspect: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := run(t, "recover", "--data-dir", dir); code != 2 || !strings.Contains(errOut, "add --yes") {
		t.Fatalf("recover without --yes: exit %d, %s", code, errOut)
	}
	if code, out, _ := run(t, "recover", "--data-dir", dir, "--inspect", "--output", "json"); code != 0 || !json.Valid([]byte(out)) || strings.Count(out, `"voter": true`) != 3 {
		t.Fatalf("the dry run changed the configuration, or --output json is not JSON: exit %d\n%s", code, out)
	}
	raftAddr, httpAddr := testkit.FreeAddr(t), testkit.FreeAddr(t)
	code, out, errOut = run(t, "recover", "--data-dir", dir, "--yes", "--raft-advertise", raftAddr)
	if code != 0 || !strings.Contains(out, "recovered node "+survivor.ID()) {
		t.Fatalf("recover --yes: exit %d\n%s%s", code, out, errOut)
	}

	base := serveDataDir(t, dir, raftAddr, httpAddr)
	wantReplay(t, base, req, first.Entry.ID)
}
