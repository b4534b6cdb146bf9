package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// These tests run the REST API over real HTTP on loopback against a real
// node: raft, bbolt, the state machine — every endpoint and error code.

const token = "e2e-admin-token-0123456789"

type answer struct {
	status int
	header http.Header
	data   map[string]any
	err    map[string]any
}

func do(t *testing.T, method, url, auth string, body any) answer {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		r = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, url, r)
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	var out struct {
		Data  map[string]any `json:"data"`
		Error map[string]any `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&out)
	return answer{resp.StatusCode, resp.Header, out.Data, out.Error}
}

func post(reqID, typ, parent, title, body string) map[string]any {
	m := map[string]any{"request_id": reqID, "type": typ, "body": body,
		"actor": map[string]any{"name": "e2e"}, "submission_mode": "manual"}
	if parent != "" {
		m["parent_id"] = parent
	}
	if title != "" {
		m["title"] = title
	}
	return m
}

func expect(t *testing.T, what string, a answer, status int, code string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("%s: status %d (%v %v), want %d", what, a.status, a.data, a.err, status)
	}
	if code != "" && (a.err == nil || a.err["code"] != code) {
		t.Fatalf("%s: error %v, want code %s", what, a.err, code)
	}
	if (status == 429 || status == 503) && a.header.Get("Retry-After") == "" {
		t.Fatalf("%s: %d without Retry-After", what, status)
	}
}

func TestEndToEndPostingRules(t *testing.T) {
	n := testnode.Start(t, testnode.WithAdminToken(token))
	base := n.URL()
	entries, admin := base+"/api/v1/entries", base+"/api/v1/admin"

	q := post(uuid.NewString(), "question", "", "A question", "Why?")
	first := do(t, "POST", entries, "", q)
	expect(t, "new question", first, 201, "")
	qid := first.data["id"].(string)
	if first.data["replayed"] != false || first.data["channel"] != "http" || first.data["url"] != base+"/threads/"+qid {
		t.Fatalf("201 body: %v", first.data)
	}
	again := do(t, "POST", entries, "", q)
	expect(t, "replay", again, 200, "")
	if again.data["replayed"] != true || again.data["id"] != qid {
		t.Fatalf("replay body: %v", again.data)
	}
	changed := post(q["request_id"].(string), "question", "", "A question", "Why not?")
	expect(t, "conflict", do(t, "POST", entries, "", changed), 409, "conflict")

	r := post(uuid.NewString(), "reply", qid, "", "Because.")
	rep := do(t, "POST", entries, "", r)
	expect(t, "reply", rep, 201, "")
	rid := rep.data["id"].(string)
	if rep.data["bookmark_url"] != base+"/replies/"+rid {
		t.Fatalf("reply urls: %v", rep.data)
	}
	expect(t, "reply to a reply", do(t, "POST", entries, "", post(uuid.NewString(), "reply", rid, "", "x")), 422, "invalid_parent")
	expect(t, "reply to nothing", do(t, "POST", entries, "", post(uuid.NewString(), "reply", uuid.NewString(), "", "x")), 404, "parent_not_found")

	// Reads.
	expect(t, "get thread", do(t, "GET", base+"/api/v1/threads/"+qid, "", nil), 200, "")
	expect(t, "get reply", do(t, "GET", base+"/api/v1/replies/"+rid, "", nil), 200, "")
	expect(t, "thread strong", do(t, "GET", base+"/api/v1/threads/"+qid+"?consistency=strong", "", nil), 200, "")
	expect(t, "missing thread", do(t, "GET", base+"/api/v1/threads/"+uuid.NewString(), "", nil), 404, "not_found")
	expect(t, "reply as thread", do(t, "GET", base+"/api/v1/threads/"+rid, "", nil), 404, "not_found")
	if got := do(t, "GET", base+"/api/v1/threads/"+qid, "", nil); got.data["request_id"] != nil {
		t.Fatalf("public read shows request_id: %v", got.data)
	}

	// Hidden: public reads 404, replay 200 with visible false; the reply's
	// replay too.
	expect(t, "hide", do(t, "POST", admin+"/entries/"+qid+"/hide", token, nil), 200, "")
	expect(t, "hidden thread", do(t, "GET", base+"/api/v1/threads/"+qid, "", nil), 404, "not_found")
	expect(t, "replies of hidden", do(t, "GET", base+"/api/v1/threads/"+qid+"/replies", "", nil), 404, "not_found")
	hidden := do(t, "POST", entries, "", q)
	expect(t, "replay hidden", hidden, 200, "")
	if hidden.data["visible"] != false {
		t.Fatalf("replay of hidden: %v", hidden.data)
	}
	if rr := do(t, "POST", entries, "", r); rr.status != 200 || rr.data["visible"] != false {
		t.Fatalf("replay of a reply under a hidden question: %d %v", rr.status, rr.data)
	}
	expect(t, "reply to hidden", do(t, "POST", entries, "", post(uuid.NewString(), "reply", qid, "", "x")), 404, "parent_not_found")
	expect(t, "unhide", do(t, "POST", admin+"/entries/"+qid+"/unhide", token, nil), 200, "")

	// Writes disabled: replays still answered, new posts 503.
	expect(t, "disable", do(t, "PUT", admin+"/settings", token, `{"writes_disabled": true}`), 200, "")
	expect(t, "replay while disabled", do(t, "POST", entries, "", q), 200, "")
	expect(t, "new while disabled", do(t, "POST", entries, "", post(uuid.NewString(), "question", "", "t", "b")), 503, "writes_disabled")
	expect(t, "enable", do(t, "PUT", admin+"/settings", token, `{"writes_disabled": false}`), 200, "")

	// Deleted: replays 410, nothing re-created.
	expect(t, "delete", do(t, "POST", admin+"/entries/"+rid+"/delete", token, nil), 200, "")
	expect(t, "replay deleted", do(t, "POST", entries, "", r), 410, "deleted")
	expect(t, "deleted reply", do(t, "GET", base+"/api/v1/replies/"+rid, "", nil), 404, "not_found")

	// Global cap, then the per-source limit (which counts replays).
	expect(t, "global cap", do(t, "PUT", admin+"/settings", token, `{"global_limit": {"count": 1, "window_seconds": 3600}}`), 200, "")
	expect(t, "over the global cap", do(t, "POST", entries, "", post(uuid.NewString(), "question", "", "t", "b")), 429, "global_rate_limited")
	expect(t, "replay at the global cap", do(t, "POST", entries, "", q), 200, "")
	expect(t, "per-source limit", do(t, "PUT", admin+"/settings", token, `{"per_source_limit": {"count": 1, "window_seconds": 3600}}`), 200, "")
	// Every earlier attempt from this address is inside the window.
	expect(t, "replay over the limit", do(t, "POST", entries, "", q), 429, "rate_limited")
	expect(t, "operator post bypasses limits", do(t, "POST", admin+"/entries", token, post(uuid.NewString(), "question", "", "From the operators", "Hello")), 201, "")
}

func TestEndToEndBadInput(t *testing.T) {
	n := testnode.Start(t, testnode.WithAdminToken(token))
	entries := n.URL() + "/api/v1/entries"
	good := post(uuid.NewString(), "question", "", "t", "b")
	goodJSON, _ := json.Marshal(good)
	for _, tc := range []struct {
		name string
		body any
	}{
		{"malformed", `{"request_id": `},
		{"unknown field", strings.Replace(string(goodJSON), `{`, `{"extra": 1, `, 1)},
		{"wrong type", strings.Replace(string(goodJSON), `"body":"b"`, `"body":5`, 1)},
		{"invalid utf-8", []byte(strings.Replace(string(goodJSON), `"b"`, "\"\xff\xfe\"", 1))},
		{"lone surrogate", strings.Replace(string(goodJSON), `"body":"b"`, `"body":"\ud800"`, 1)},
		{"bad uuid", post("not-a-uuid", "question", "", "t", "b")},
		{"missing title", post(uuid.NewString(), "question", "", "", "b")},
		{"title too long", post(uuid.NewString(), "question", "", strings.Repeat("あ", 201), "b")},
		{"bad type", post(uuid.NewString(), "comment", "", "t", "b")},
		{"array", `[]`},
		{"empty", ``},
	} {
		a := do(t, "POST", entries, "", tc.body)
		expect(t, tc.name, a, 400, "invalid_request")
	}
	expect(t, "huge body", do(t, "POST", entries, "", strings.Repeat("x", restarea.MaxPostJSONBytes+1)), 413, "payload_too_large")
	expect(t, "wrong method", do(t, "GET", entries, "", nil), 405, "method_not_allowed")
	expect(t, "bad limit", do(t, "GET", n.URL()+"/api/v1/threads?limit=500", "", nil), 400, "invalid_request")
	expect(t, "bad cursor", do(t, "GET", n.URL()+"/api/v1/threads?cursor=%%%", "", nil), 400, "invalid_request")
	expect(t, "bad cursor value", do(t, "GET", n.URL()+"/api/v1/threads?cursor=zzzz", "", nil), 400, "invalid_request")
	expect(t, "no token", do(t, "GET", n.URL()+"/api/v1/admin/settings", "", nil), 401, "unauthorized")
	expect(t, "wrong token", do(t, "GET", n.URL()+"/api/v1/admin/settings", "nope", nil), 401, "unauthorized")
	// Nothing above touched the state.
	page := do(t, "GET", n.URL()+"/api/v1/admin/entries", token, nil)
	if got := page.data["entries"].([]any); len(got) != 0 {
		t.Fatalf("bad input stored %d entries", len(got))
	}
	off := testnode.Start(t)
	expect(t, "admin off", do(t, "GET", off.URL()+"/api/v1/admin/settings", "anything", nil), 404, "not_found")
}

func TestEndToEndPagingAndBackup(t *testing.T) {
	n := testnode.Start(t, testnode.WithAdminToken(token))
	base := n.URL()
	q := do(t, "POST", base+"/api/v1/entries", "", post(uuid.NewString(), "question", "", "paged", "b"))
	qid := q.data["id"].(string)
	for i := range 7 {
		expect(t, "reply", do(t, "POST", base+"/api/v1/entries", "", post(uuid.NewString(), "reply", qid, "", fmt.Sprint(i))), 201, "")
	}
	var bodies []string
	cursor := ""
	for pages := 0; pages < 10; pages++ {
		a := do(t, "GET", base+"/api/v1/threads/"+qid+"/replies?limit=3&cursor="+cursor, "", nil)
		expect(t, "page", a, 200, "")
		for _, r := range a.data["replies"].([]any) {
			bodies = append(bodies, r.(map[string]any)["body"].(string))
		}
		if a.data["next_cursor"] == nil {
			break
		}
		cursor = a.data["next_cursor"].(string)
	}
	if strings.Join(bodies, ",") != "0,1,2,3,4,5,6" {
		t.Fatalf("paged replies: %v", bodies)
	}
	st := do(t, "GET", base+"/api/v1/cluster", "", nil)
	if st.status != 200 || st.data["node_id"] != n.ID() || st.data["state"] != "leader" {
		t.Fatalf("cluster status: %d %v", st.status, st.data)
	}
	// Addresses are for operators: the public view names the members and
	// the leader, not where they listen.
	members := st.data["members"].([]any)
	if len(members) != 1 || members[0].(map[string]any)["id"] != n.ID() || st.data["leader_id"] != n.ID() || st.data["term"] == nil {
		t.Fatalf("public cluster status lacks members or leader: %v", st.data)
	}
	if _, ok := st.data["leader_url"]; ok {
		t.Fatalf("public cluster status shows leader_url: %v", st.data)
	}
	if m := members[0].(map[string]any); m["raft_addr"] != nil || m["url"] != nil {
		t.Fatalf("public cluster status shows a member's addresses: %v", m)
	}
	st = do(t, "GET", base+"/api/v1/cluster", token, nil)
	if m := st.data["members"].([]any)[0].(map[string]any); m["raft_addr"] == "" || m["raft_addr"] == nil || m["url"] == nil || st.data["leader_url"] == nil {
		t.Fatalf("cluster status with the admin token lacks addresses: %v", st.data)
	}
	if wrong := do(t, "GET", base+"/api/v1/cluster", "not-the-admin-token-at-all", nil); wrong.status != 200 || wrong.data["leader_url"] != nil {
		t.Fatalf("cluster status with a wrong token: %d %v", wrong.status, wrong.data)
	}
	req, _ := http.NewRequest("GET", base+"/api/v1/admin/backup", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("backup: %v %v", resp, err)
	}
	path := filepath.Join(t.TempDir(), "backup.db")
	f, _ := os.Create(path)
	io.Copy(f, resp.Body)
	resp.Body.Close()
	f.Close()
	if _, err := fsm.CheckStateFile(path); err != nil {
		t.Fatalf("backup is not a state file: %v", err)
	}
}
