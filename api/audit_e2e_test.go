package api_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/restarea/restarea/internal/testkit/testnode"
)

// GET /api/v1/admin/audit over real HTTP against a real node: the
// operator's changes, newest first, with what changed and where the
// request came from; paging; the token; bad parameters.
func TestEndToEndAudit(t *testing.T) {
	n := testnode.Start(t, testnode.WithAdminToken(token))
	testnode.WaitLogFormat(t, n, 3)
	base := n.URL()
	admin, audit := base+"/api/v1/admin", base+"/api/v1/admin/audit"

	expect(t, "audit without token", do(t, "GET", audit, "", nil), 401, "unauthorized")
	// A new cluster's trail holds what its forming did — the cluster
	// version raised, the configured limits, the member — and nothing an
	// operator did.
	start := do(t, "GET", audit, token, nil)
	expect(t, "audit of a new cluster", start, 200, "")
	formed, ok := start.data["records"].([]any)
	if !ok || start.data["next_cursor"] != nil {
		t.Fatalf("trail of a new cluster: %v", start.data)
	}
	for _, r := range formed {
		rec := r.(map[string]any)
		switch {
		case rec["action"] == "cluster_version", rec["action"] == "member_add",
			rec["action"] == "settings" && rec["from_config"] == true:
		default:
			t.Fatalf("trail of a new cluster holds %v", rec)
		}
	}
	base0 := len(formed)

	q := do(t, "POST", base+"/api/v1/entries", "", post(uuid.NewString(), "question", "", "Audited", "Hide me."))
	expect(t, "question", q, 201, "")
	qid := q.data["id"].(string)
	expect(t, "hide", do(t, "POST", admin+"/entries/"+qid+"/hide", token, nil), 200, "")
	expect(t, "hide again", do(t, "POST", admin+"/entries/"+qid+"/hide", token, nil), 200, "")
	expect(t, "settings", do(t, "PUT", admin+"/settings", token, map[string]any{
		"per_source_limit": map[string]any{"count": 9, "window_seconds": 90}}), 200, "")
	expect(t, "delete", do(t, "POST", admin+"/entries/"+qid+"/delete", token, nil), 200, "")

	all := do(t, "GET", audit, token, nil)
	expect(t, "audit", all, 200, "")
	recs := all.data["records"].([]any)
	if len(recs) != base0+3 || all.data["next_cursor"] != nil {
		t.Fatalf("trail: %v, want delete, settings, hide", all.data)
	}
	var actions []string
	for _, r := range recs[:3] {
		rec := r.(map[string]any)
		actions = append(actions, rec["action"].(string))
		if rec["source"] != "127.0.0.1" || rec["time"] == nil || rec["seq"] == nil {
			t.Fatalf("record without source, time or seq: %v", rec)
		}
	}
	if actions[0] != "delete" || actions[1] != "settings" || actions[2] != "hide" {
		t.Fatalf("actions %v, want delete, settings, hide", actions)
	}
	set := recs[1].(map[string]any)["changes"].([]any)[0].(map[string]any)
	if set["field"] != "per_source_limit" || set["after"].(map[string]any)["count"] != 9.0 {
		t.Fatalf("settings change: %v", set)
	}
	hide := recs[2].(map[string]any)
	if hide["entry_id"] != qid || hide["entry_type"] != "question" {
		t.Fatalf("hide record: %v", hide)
	}

	// Paging: one record a page, following next_cursor, ends after all.
	var seen []string
	cursor := ""
	for i := 0; i < base0+5; i++ {
		p := do(t, "GET", audit+"?limit=1&cursor="+cursor, token, nil)
		expect(t, "audit page", p, 200, "")
		for _, r := range p.data["records"].([]any) {
			seen = append(seen, r.(map[string]any)["action"].(string))
		}
		c, ok := p.data["next_cursor"].(string)
		if !ok {
			break
		}
		cursor = c
	}
	if len(seen) != base0+3 || seen[0] != "delete" || seen[2] != "hide" {
		t.Fatalf("paged actions %v", seen)
	}
	expect(t, "limit 0", do(t, "GET", audit+"?limit=0", token, nil), 400, "invalid_request")
	expect(t, "limit 201", do(t, "GET", audit+"?limit=201", token, nil), 400, "invalid_request")
	expect(t, "bad cursor", do(t, "GET", audit+"?cursor=!!", token, nil), 400, "invalid_request")
	expect(t, "post to audit", do(t, "POST", audit, token, nil), 405, "")
}
