package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

const auditToken = "audit-test-admin-token-0123456789"

// adminCall makes an admin request and fails the test unless it answers
// 200. A 503 (leadership moving, as it does on a loaded machine) is
// retried, as a client would: the admin actions are idempotent.
func adminCall(t *testing.T, method, url, body string) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, method+" "+url+" to answer 200", func() error {
		r := testkit.Do(t, nil, method, url, body, "Authorization", "Bearer "+auditToken)
		switch r.Status {
		case http.StatusOK:
			return nil
		case http.StatusServiceUnavailable:
			return fmt.Errorf("%d %s", r.Status, r.Body)
		}
		t.Fatalf("%s %s: %d %s", method, url, r.Status, r.Body)
		return nil
	})
}

func fullTrail(t *testing.T, n *node.Node) []restarea.AuditRecord {
	t.Helper()
	all, err := trailOf(n)
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// trailOf reads n's whole audit trail, newest first.
func trailOf(n *node.Node) ([]restarea.AuditRecord, error) {
	var all []restarea.AuditRecord
	opts := restarea.ListOptions{Limit: 3}
	for {
		p, err := n.ListAudit(context.Background(), opts)
		if err != nil {
			return nil, fmt.Errorf("node %s: list audit: %w", n.ID(), err)
		}
		all = append(all, p.Records...)
		if p.NextCursor == nil {
			return all, nil
		}
		opts.Cursor = *p.NextCursor
	}
}

// An operator's actions through a follower's admin API — hide, settings, a
// leadership transfer, a removal — are in the audit trail of every node,
// identically, with the request's source address.
func TestAuditAcrossCluster(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, testnode.WithAdminToken(auditToken), testnode.WithConfig(func(c *server.Config) {
		c.LeaderWait = 3 * time.Second
		c.ApplyTimeout = 5 * time.Second
	}))
	ctx := context.Background()
	leader := testnode.Leader(t, nodes)
	var follower *node.Node
	for _, n := range nodes {
		if st, err := n.ClusterStatus(ctx); err != nil || st.LogFormat != 3 {
			t.Fatalf("node %s: log format %d (%v), want 3", n.ID(), st.LogFormat, err)
		}
		if n != leader && follower == nil {
			follower = n
		}
	}
	res, err := follower.Post(ctx, testkit.Question("How do retries work?"), restarea.PostMeta{Source: "10.1.1.1", Channel: restarea.ChannelHTTP})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Entry.ID
	admin := follower.URL() + "/api/v1/admin"
	adminCall(t, "POST", admin+"/entries/"+id+"/hide", "")
	adminCall(t, "POST", admin+"/entries/"+id+"/hide", "") // a no-op: not recorded
	adminCall(t, "PUT", admin+"/settings", `{"writes_disabled": true}`)
	// On a loaded machine leadership may have moved meanwhile, even to
	// the follower: hand it to a node that does not lead now.
	leader = testnode.Leader(t, nodes)
	if leader == follower {
		for _, n := range nodes {
			if n != leader {
				follower = n
				break
			}
		}
	}
	adminCall(t, "POST", follower.URL()+"/api/v1/admin/cluster/leadership-transfer", `{"id": "`+follower.ID()+`"}`)
	// The old leader, now a follower, forwards a removal to the new one.
	var other *node.Node
	for _, n := range nodes {
		if n != leader && n != follower {
			other = n
		}
	}
	adminCall(t, "DELETE", leader.URL()+"/api/v1/admin/cluster/members/"+other.ID(), "")
	kept := []*node.Node{leader, follower}

	// Wait until both trails hold the removal and agree (a node that just
	// lost or gained leadership may refuse a read for a moment).
	var trail []restarea.AuditRecord
	converged := func() error {
		var err error
		if trail, err = trailOf(kept[0]); err != nil || len(trail) == 0 || trail[0].Action != restarea.AuditMemberRemove {
			return fmt.Errorf("node %s: newest of %d records is not the removal (%v)", kept[0].ID(), len(trail), err)
		}
		for _, n := range kept[1:] {
			if other, err := trailOf(n); err != nil || !reflect.DeepEqual(other, trail) {
				return fmt.Errorf("node %s's trail differs from node %s's (%v)", n.ID(), kept[0].ID(), err)
			}
		}
		return nil
	}
	if err := testkit.Poll(context.Background(), 30*time.Second, converged); err != nil {
		for _, n := range kept {
			j, err := trailOf(n)
			t.Logf("node %s: %+v (%v)", n.ID(), j, err)
		}
		t.Fatalf("the audit trails did not converge to the same records: %v", err)
	}
	byAction := map[restarea.AuditAction][]restarea.AuditRecord{}
	for _, r := range trail {
		if !r.FromConfig { // the limits each leader applies from its configuration
			byAction[r.Action] = append(byAction[r.Action], r)
		}
	}
	hide, set, move := byAction[restarea.AuditHide], byAction[restarea.AuditSettings], byAction[restarea.AuditLeadershipTransfer]
	if len(hide) != 1 || hide[0].EntryID != id || hide[0].Source != "127.0.0.1" {
		t.Fatalf("hide records: %+v", hide)
	}
	if len(set) != 1 || set[0].Source != "127.0.0.1" || len(set[0].Changes) != 1 || set[0].Changes[0].Field != "writes_disabled" {
		t.Fatalf("settings records: %+v", set)
	}
	// The leader before the transfer: the one found above, unless an
	// election moved leadership again just before it (a loaded machine);
	// never the target, never unknown.
	priorLeader := func(before string) bool {
		for _, n := range nodes {
			if n != follower && before == `"`+n.ID()+`"` {
				return true
			}
		}
		return false
	}
	if len(move) != 1 || move[0].MemberID != follower.ID() || move[0].Source != "127.0.0.1" || !priorLeader(string(move[0].Changes[0].Before)) {
		t.Fatalf("leadership transfer records: %+v", move)
	}
	if rm := byAction[restarea.AuditMemberRemove]; len(rm) != 1 || rm[0].MemberID != other.ID() || rm[0].Source != "127.0.0.1" {
		t.Fatalf("member_remove records: %+v", rm)
	}
	// The first member's too: a new cluster writes its log format before
	// its first member announces itself (it forms at the newest cluster
	// version).
	if adds := byAction[restarea.AuditMemberAdd]; len(adds) != 3 {
		t.Fatalf("member_add records: %+v, want the three members", adds)
	}
	for i := 1; i < len(trail); i++ {
		if trail[i].Seq >= trail[i-1].Seq || trail[i].Time.After(trail[i-1].Time) {
			t.Fatalf("trail not newest first: %+v", trail)
		}
	}
}

// Each operator action is logged with what it changed and where it came
// from, and never with the token; a no-op says it changed nothing.
func TestAuditLogsOperatorActions(t *testing.T) {
	var logs testkit.SyncBuffer
	n := testnode.Start(t, testnode.WithAdminToken(auditToken), testnode.WithConfig(func(c *server.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	}))
	testnode.WaitLogFormat(t, n, 3)
	res, err := n.Post(context.Background(), testkit.Question("How do retries work?"), restarea.PostMeta{Source: "10.1.1.1", Channel: restarea.ChannelHTTP})
	if err != nil {
		t.Fatal(err)
	}
	admin := n.URL() + "/api/v1/admin"
	adminCall(t, "POST", admin+"/entries/"+res.Entry.ID+"/hide", "")
	adminCall(t, "POST", admin+"/entries/"+res.Entry.ID+"/hide", "")
	adminCall(t, "PUT", admin+"/settings", `{"global_limit": {"count": 5, "window_seconds": 60}}`)

	var actions []map[string]any
	for _, line := range strings.Split(logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && strings.HasPrefix(fmt.Sprint(m["msg"]), "operator action") {
			actions = append(actions, m)
		}
	}
	if len(actions) != 3 {
		t.Fatalf("operator action lines: %v, want 3", actions)
	}
	hide, again, set := actions[0], actions[1], actions[2]
	if hide["action"] != "hide" || hide["target"] != res.Entry.ID || hide["source"] != "127.0.0.1" ||
		!strings.Contains(fmt.Sprint(hide["changes"]), `"field":"visible","before":true,"after":false`) {
		t.Fatalf("hide line: %v", hide)
	}
	if again["msg"] != "operator action changed nothing" {
		t.Fatalf("second hide line: %v", again)
	}
	if set["action"] != "settings" || !strings.Contains(fmt.Sprint(set["changes"]), `"after":{"count":5,"window_seconds":60}`) {
		t.Fatalf("settings line: %v", set)
	}
	if strings.Contains(logs.String(), auditToken) {
		t.Fatal("the admin token is in the logs")
	}
}
