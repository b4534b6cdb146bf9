package api_test

import (
	"testing"

	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// POST /api/v1/admin/cluster/finalize-upgrade over real HTTP against a
// real node: admin only; 200 with the result and the cluster status; the
// raise is audited with the operator's address; a body is refused; the
// public status shows the cluster version, not the members' releases.
func TestEndToEndFinalizeUpgrade(t *testing.T) {
	n := testnode.Start(t, testnode.WithAdminToken(token), testnode.FormedByV010())
	testnode.WaitLogFormat(t, n, 3)
	base := n.URL()
	route := base + "/api/v1/admin/cluster/finalize-upgrade"

	expect(t, "finalize without token", do(t, "POST", route, "", nil), 401, "unauthorized")
	expect(t, "finalize with a body", do(t, "POST", route, token, map[string]any{"to": 3}), 400, "invalid_request")
	expect(t, "GET finalize", do(t, "GET", route, token, nil), 405, "method_not_allowed")
	// A single node of this release: the newest version all members know
	// is this binary's.
	newest := float64(fsm.ClusterVersionMax)
	r := do(t, "POST", route, token, nil)
	expect(t, "finalize", r, 200, "")
	st, _ := r.data["status"].(map[string]any)
	if r.data["changed"] != true || r.data["from"] != 1.0 || r.data["to"] != newest || st["cluster_version"] != newest || st["cluster_version_max"] != newest {
		t.Fatalf("finalize answer: %v", r.data)
	}
	members, _ := st["members"].([]any)
	if len(members) != 1 || members[0].(map[string]any)["version"] != "dev" || members[0].(map[string]any)["cluster_version_max"] != newest {
		t.Fatalf("members in the finalize answer: %v", st["members"])
	}
	again := do(t, "POST", route, token, nil)
	expect(t, "finalize again", again, 200, "")
	if again.data["changed"] != false || again.data["to"] != newest {
		t.Fatalf("second finalize: %v", again.data)
	}

	audit := do(t, "GET", base+"/api/v1/admin/audit", token, nil)
	rec := audit.data["records"].([]any)[0].(map[string]any)
	if rec["action"] != "cluster_version" || rec["source"] != "127.0.0.1" {
		t.Fatalf("newest audit record: %v", rec)
	}

	pub := do(t, "GET", base+"/api/v1/cluster", "", nil)
	expect(t, "public status", pub, 200, "")
	if pub.data["cluster_version"] != newest || pub.data["cluster_version_max"] != nil {
		t.Fatalf("public status: %v", pub.data)
	}
	for _, m := range pub.data["members"].([]any) {
		if _, ok := m.(map[string]any)["version"]; ok {
			t.Fatalf("public status shows a member's release: %v", m)
		}
	}
}
