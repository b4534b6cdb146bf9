package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/mcp"
)

const adminToken = "e2e-find-admin-token-0123456789"

// restFind is POST /api/v1/entries/find: the status, the ids found and
// the error code, if any.
func restFind(t *testing.T, base string, args map[string]any) (int, []string, string) {
	t.Helper()
	b, _ := json.Marshal(args)
	r := testkit.Do(t, nil, http.MethodPost, base+"/api/v1/entries/find", string(b))
	return r.Status, findIDs(t, []byte(r.Body)), errorCode([]byte(r.Body))
}

// mcpFind is the search_entries tool with body.
func mcpFind(t *testing.T, cs *sdk.ClientSession, args map[string]any) (int, []string, string) {
	t.Helper()
	res, err := cs.CallTool(ctx(t), &sdk.CallToolParams{Name: mcp.ToolSearch, Arguments: args})
	if err != nil {
		t.Fatalf("search_entries: %v", err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var r struct {
		HTTPStatus int `json:"http_status"`
	}
	json.Unmarshal(b, &r)
	return r.HTTPStatus, findIDs(t, b), errorCode(b)
}

// mcpFindServed is mcpFind retried while it answers 503, as the guide
// tells an agent to: a strong read on a busy machine may time out waiting
// for the leader, and that answer is "retry", not a result.
func mcpFindServed(t *testing.T, cs *sdk.ClientSession, args map[string]any) (status int, ids []string, code string) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, "search_entries to be served", func() error {
		if status, ids, code = mcpFind(t, cs, args); status == http.StatusServiceUnavailable {
			return fmt.Errorf("503 %s", code)
		}
		return nil
	})
	return status, ids, code
}

func findIDs(t *testing.T, body []byte) []string {
	var r struct {
		Data struct {
			Entries []struct {
				ID        string `json:"id"`
				RequestID string `json:"request_id"`
			} `json:"entries"`
			Results []struct {
				ID        string   `json:"id"`
				RequestID string   `json:"request_id"`
				Score     *float64 `json:"score"`
			} `json:"results"`
		} `json:"data"`
	}
	json.Unmarshal(body, &r)
	var ids []string
	for _, e := range r.Data.Entries {
		if e.RequestID != "" {
			t.Fatalf("a find answered a request_id: %s", body)
		}
		ids = append(ids, e.ID)
	}
	for _, e := range r.Data.Results {
		if e.RequestID != "" || e.Score != nil {
			t.Fatalf("a find by body answered a request_id or a score: %s", body)
		}
		ids = append(ids, e.ID)
	}
	return ids
}

func errorCode(body []byte) string {
	var r struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(body, &r)
	return r.Error.Code
}

// A post whose request_id was lost is found by its whole body, on any
// node, over REST and MCP alike: before the upgrade is finalized a find
// answers 503 (never "no match"); finalizing to cluster version 4 indexes
// the entries stored before it, and from then on every node finds old and
// new entries with that body, newest first, with a 20,000-character body
// as with a short one.
func TestFindPostAcrossNodes(t *testing.T) {
	// A cluster formed by v0.1.0: find answers 503 until it is finalized.
	nodes := testnode.StartCluster(t, 3, testnode.WithAdminToken(adminToken), testnode.FormedByV010())
	leader := testnode.Leader(t, nodes)
	var follower = nodes[0]
	for _, n := range nodes {
		if n != leader {
			follower = n
		}
	}
	long := strings.Repeat("A body longer than any search query. ", 541)[:20000]
	posted := func(n interface{ URL() string }, body string) string {
		q := testkit.Question("lost request id " + uuid.NewString()[:8])
		q.Body = body
		r, e, _ := testkit.PostEntry(t, n.URL(), q)
		if r.Status != http.StatusCreated {
			t.Fatalf("post: %d %s", r.Status, r.Body)
		}
		return e.ID
	}
	old := posted(follower, long)
	short := posted(leader, "short body")

	status, _, code := restFind(t, follower.URL(), map[string]any{"body": long})
	if status != http.StatusServiceUnavailable || code != "unavailable" {
		t.Fatalf("find before finalizing: %d %s, want 503 unavailable", status, code)
	}
	status, _, code = restFind(t, follower.URL(), map[string]any{"body": ""})
	if status != http.StatusBadRequest || code != "invalid_request" {
		t.Fatalf("find without a body: %d %s", status, code)
	}
	status, _, _ = restFind(t, follower.URL(), map[string]any{"body": "x", "title": "not a member"})
	if status != http.StatusBadRequest {
		t.Fatalf("find with an unknown member: %d", status)
	}

	if r := testkit.Do(t, nil, http.MethodPost, follower.URL()+"/api/v1/admin/cluster/finalize-upgrade", "",
		"Authorization", "Bearer "+adminToken); r.Status != http.StatusOK {
		t.Fatalf("finalize: %d %s", r.Status, r.Body)
	}
	newer := posted(leader, long)

	for _, n := range nodes {
		testkit.Eventually(t, 30*time.Second, n.ID()+" to find both entries with the long body", func() error {
			status, ids, code := restFind(t, n.URL(), map[string]any{"body": long, "type": "question"})
			if status != http.StatusOK || strings.Join(ids, ",") != newer+","+old {
				return fmt.Errorf("%d %s %v", status, code, ids)
			}
			return nil
		})
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil).
		Connect(ctx(t), &sdk.StreamableClientTransport{Endpoint: follower.URL() + "/mcp", DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if status, ids, code := mcpFindServed(t, cs, map[string]any{"body": "short body", "consistency": "strong"}); status != 200 || len(ids) != 1 || ids[0] != short {
		t.Fatalf("search_entries with body of the short body: %d %s %v, want %s", status, code, ids, short)
	}
	if status, ids, _ := mcpFindServed(t, cs, map[string]any{"body": long, "limit": 1}); status != 200 || len(ids) != 1 || ids[0] != newer {
		t.Fatalf("search_entries with body, one a page: %d %v", status, ids)
	}
	if status, ids, _ := mcpFindServed(t, cs, map[string]any{"body": "never posted"}); status != 200 || len(ids) != 0 {
		t.Fatalf("search_entries with body of a body never posted: %d %v", status, ids)
	}
	if status, _, code := mcpFind(t, cs, map[string]any{"body": "x", "limit": 51}); status != 400 || code != "invalid_request" {
		t.Fatalf("search_entries with body past the limit: %d %s", status, code)
	}
	if status, _, code := mcpFind(t, cs, map[string]any{"body": "x", "q": "x"}); status != 400 || code != "invalid_request" {
		t.Fatalf("search_entries with body and q: %d %s", status, code)
	}
}
