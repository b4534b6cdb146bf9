package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/mcp"
)

type searchAnswer struct {
	Data struct {
		Results []struct {
			restarea.Entry
			RequestID *string `json:"request_id"`
			Score     float64 `json:"score"`
			Snippet   string  `json:"snippet"`
		} `json:"results"`
		NextCursor *string `json:"next_cursor"`
	} `json:"data"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func restSearch(t *testing.T, base string, params url.Values) (int, searchAnswer) {
	t.Helper()
	r := testkit.Get(t, base+"/api/v1/search?"+params.Encode())
	var a searchAnswer
	if err := json.Unmarshal([]byte(r.Body), &a); err != nil {
		t.Fatalf("search answer %q: %v", r.Body, err)
	}
	return r.Status, a
}

// restPost posts req through the REST API and returns the stored entry.
func restPost(t *testing.T, base string, req restarea.PostRequest) restarea.Entry {
	t.Helper()
	r, e, _ := testkit.PostEntry(t, base, req)
	if r.Status != http.StatusCreated {
		t.Fatalf("post: %d %s", r.Status, r.Body)
	}
	return e
}

func searchQuestion(title, body, actor string) restarea.PostRequest {
	q := testkit.Question(title)
	q.Body, q.Actor = body, restarea.Actor{Name: actor}
	return q
}

// TestSearchOverHTTP: REST search against a real node, right after the
// writes (a query waits briefly for the index to reach the applied state),
// filters, validation, and hidden entries gone at once.
func TestSearchOverHTTP(t *testing.T) {
	n := testnode.Start(t)
	base := n.URL()
	before := time.Now().UTC().Add(-time.Second)
	body := "The client posted twice after a timeout; how do I retry safely?"
	mine := restPost(t, base, searchQuestion("Retrying posts", body, "search-e2e"))
	ja := restPost(t, base, searchQuestion("再試行について", "タイムアウトの後は同じrequest_idで再試行してください。", "agent-ja"))
	restPost(t, base, searchQuestion("Caching", "Unrelated text about caches.", "other"))

	status, a := restSearch(t, base, url.Values{"q": {"posting retries"}})
	if status != http.StatusOK || len(a.Data.Results) != 1 || a.Data.Results[0].ID != mine.ID {
		t.Fatalf("posting retries: %d %+v", status, a)
	}
	r := a.Data.Results[0]
	if r.RequestID != nil || r.URL == "" || r.Score <= 0 || !strings.Contains(r.Snippet, "«posted»") {
		t.Fatalf("result shape: %+v", r)
	}
	if _, a := restSearch(t, base, url.Values{"q": {"再試行"}}); len(a.Data.Results) != 1 || a.Data.Results[0].ID != ja.ID {
		t.Fatalf("再試行: %+v", a)
	}
	// find_my_post: exact body, actor, time window.
	_, a = restSearch(t, base, url.Values{"q": {body}, "actor": {"search-e2e"}, "since": {before.Format(time.RFC3339)}, "type": {"question"}})
	if len(a.Data.Results) != 1 || a.Data.Results[0].ID != mine.ID {
		t.Fatalf("find_my_post: %+v", a)
	}
	if _, a := restSearch(t, base, url.Values{"q": {body}, "actor": {"someone-else"}}); len(a.Data.Results) != 0 {
		t.Fatalf("actor filter: %+v", a)
	}

	for _, bad := range []struct {
		params url.Values
		field  string
	}{
		{url.Values{}, "q"},
		{url.Values{"q": {strings.Repeat("a", 501)}}, "q"},
		{url.Values{"q": {"a"}, "type": {"answer"}}, "type"},
		{url.Values{"q": {"a"}, "since": {"yesterday"}}, "since"},
		{url.Values{"q": {"a"}, "limit": {"51"}}, "limit"},
		{url.Values{"q": {"a"}, "cursor": {"nope"}}, "cursor"},
	} {
		status, a := restSearch(t, base, bad.params)
		if status != http.StatusBadRequest || a.Error == nil || a.Error.Code != "invalid_request" || !strings.HasPrefix(a.Error.Message, bad.field) {
			t.Errorf("%v: %d %+v, want 400 naming %s", bad.params, status, a.Error, bad.field)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := n.HideEntry(ctx, mine.ID); err != nil {
		t.Fatal(err)
	}
	if _, a := restSearch(t, base, url.Values{"q": {"posting retries"}}); len(a.Data.Results) != 0 {
		t.Fatalf("hidden entry found: %+v", a)
	}
	if err := n.DeleteEntry(ctx, ja.ID); err != nil {
		t.Fatal(err)
	}
	if _, a := restSearch(t, base, url.Values{"q": {"再試行"}}); len(a.Data.Results) != 0 {
		t.Fatalf("deleted entry found: %+v", a)
	}
}

// TestSearchMCP calls search_entries over real HTTP.
func TestSearchMCP(t *testing.T) {
	n := testnode.Start(t)
	mine := restPost(t, n.URL(), searchQuestion("Stemming", "Indexing entries asynchronously", "mcp-e2e"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: n.URL() + "/mcp", DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(args map[string]any) (int, searchAnswer) {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolSearch, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var r struct {
			HTTPStatus int `json:"http_status"`
			searchAnswer
		}
		json.Unmarshal(b, &r)
		return r.HTTPStatus, r.searchAnswer
	}
	status, a := call(map[string]any{"q": "indexed", "actor": "mcp-e2e", "limit": 5})
	if status != 200 || len(a.Data.Results) != 1 || a.Data.Results[0].ID != mine.ID || !strings.Contains(a.Data.Results[0].Snippet, "«Indexing»") {
		t.Fatalf("search_entries: %d %+v", status, a)
	}
	if status, a := call(map[string]any{"q": "x", "limit": 0}); status != 400 || a.Error == nil || !strings.HasPrefix(a.Error.Message, "limit") {
		t.Fatalf("bad limit: %d %+v", status, a.Error)
	}
}

// TestSearchFollowerAndRebuild: every node keeps its own index (a
// follower finds what the leader applied), and a node whose index
// directory is removed rebuilds it on start.
func TestSearchFollowerAndRebuild(t *testing.T) {
	nodes := testnode.StartCluster(t, 3)
	leader := testnode.Leader(t, nodes)
	e := restPost(t, leader.URL(), searchQuestion("Replicated state", "every node indexes its own state", "cluster-e2e"))
	for _, n := range nodes {
		testkit.Eventually(t, 30*time.Second, "node "+n.URL()+" to find the entry", func() error {
			if _, a := restSearch(t, n.URL(), url.Values{"q": {"indexes"}}); len(a.Data.Results) != 1 || a.Data.Results[0].ID != e.ID {
				return fmt.Errorf("found %+v", a)
			}
			return nil
		})
	}

	dir := t.TempDir()
	n := testnode.Start(t, testnode.WithDataDir(dir))
	e = restPost(t, n.URL(), searchQuestion("Rebuild", "rebuilt from the state on start", "rebuild-e2e"))
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "search")); err != nil {
		t.Fatal(err)
	}
	n = testnode.Start(t, testnode.WithDataDir(dir))
	testkit.Eventually(t, 30*time.Second, "the index to be rebuilt", func() error {
		status, a := restSearch(t, n.URL(), url.Values{"q": {"rebuilt"}})
		if status != http.StatusOK && status != http.StatusServiceUnavailable {
			t.Fatalf("search after removing the index: %d %+v", status, a)
		}
		if status != http.StatusOK || len(a.Data.Results) != 1 || a.Data.Results[0].ID != e.ID {
			return fmt.Errorf("%d %+v", status, a)
		}
		return nil
	})
}
