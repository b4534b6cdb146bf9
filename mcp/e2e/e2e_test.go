// Package e2e_test drives the MCP endpoint of a real rest.area node (raft,
// bbolt, HTTP on loopback) next to its REST API. It lives apart from
// package mcp so that the adapter's own tests never depend on the node.
package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/mcp"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// question returns post_entry arguments (a REST body too) with request_id
// rid and always the same content.
func question(rid string) map[string]any {
	q := testkit.Question("same")
	q.RequestID = rid
	return testkit.Args(q)
}

// answer is what either channel said: the status and the entry.
type answer struct {
	status  int
	channel string // the channel this request came by
	entry   map[string]any
}

func viaMCP(t *testing.T, cs *sdk.ClientSession, args map[string]any) answer {
	res, err := cs.CallTool(ctx(t), &sdk.CallToolParams{Name: mcp.ToolPostEntry, Arguments: args})
	if err != nil {
		t.Errorf("mcp post: %v", err)
		return answer{}
	}
	b, _ := json.Marshal(res.StructuredContent)
	var r struct {
		HTTPStatus int            `json:"http_status"`
		Data       map[string]any `json:"data"`
	}
	json.Unmarshal(b, &r)
	return answer{r.HTTPStatus, "mcp", r.Data}
}

func viaREST(t *testing.T, base string, args map[string]any) answer {
	body, _ := json.Marshal(args)
	resp, err := http.Post(base+"/api/v1/entries", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Errorf("rest post: %v", err)
		return answer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r struct {
		Data map[string]any `json:"data"`
	}
	json.Unmarshal(b, &r)
	return answer{resp.StatusCode, "http", r.Data}
}

// TestMixedChannels posts the same request_id and content at once over REST
// and MCP: one entry, exactly one 201, the others 200 replayed, and the
// stored channel is the winner's.
func TestMixedChannels(t *testing.T) {
	n := testnode.Start(t)
	base := n.URL()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil).
		Connect(ctx(t), &sdk.StreamableClientTransport{Endpoint: base + "/mcp", DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	const rounds, perChannel = 4, 4
	for round := range rounds {
		rid := uuid.NewString()
		answers := make(chan answer, 2*perChannel)
		var wg sync.WaitGroup
		for range perChannel {
			wg.Add(2)
			go func() { defer wg.Done(); answers <- viaMCP(t, cs, question(rid)) }()
			go func() { defer wg.Done(); answers <- viaREST(t, base, question(rid)) }()
		}
		wg.Wait()
		close(answers)
		var created []answer
		ids := map[any]bool{}
		for a := range answers {
			switch {
			case a.status == 201 && a.entry["replayed"] == false:
				created = append(created, a)
			case a.status == 200 && a.entry["replayed"] == true:
			default:
				t.Errorf("round %d: unexpected answer %d %v", round, a.status, a.entry)
			}
			ids[a.entry["id"]] = true
		}
		if len(created) != 1 || len(ids) != 1 {
			t.Fatalf("round %d: %d created, %d distinct ids", round, len(created), len(ids))
		}
		if got := created[0].entry["channel"]; got != created[0].channel {
			t.Errorf("round %d: stored channel %v, but the %s request won", round, got, created[0].channel)
		}
	}
}

// TestRelayToNode runs the stdio relay's server in process against a real
// node behind a dead first URL.
func TestRelayToNode(t *testing.T) {
	n := testnode.Start(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()

	st, ct := sdk.NewInMemoryTransports()
	ss, err := mcp.NewRelay([]string{dead, n.URL()}, mcp.RelayConfig{}).Connect(ctx(t), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx(t), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	rid := uuid.NewString()
	first := viaMCP(t, cs, question(rid))
	if first.status != 201 || first.entry["channel"] != "mcp" {
		t.Fatalf("relayed post: %d %v", first.status, first.entry)
	}
	// The same request over REST is a replay of the MCP post.
	again := viaREST(t, n.URL(), question(rid))
	if again.status != 200 || again.entry["id"] != first.entry["id"] || again.entry["channel"] != "mcp" {
		t.Errorf("REST replay of a relayed post: %d %v", again.status, again.entry)
	}
	res, err := cs.CallTool(ctx(t), &sdk.CallToolParams{Name: mcp.ToolGetThread, Arguments: map[string]any{"id": first.entry["id"]}})
	if err != nil || res.IsError {
		t.Fatalf("get_thread via relay: %v %v", err, res)
	}
	if b, _ := json.Marshal(res.StructuredContent); !bytes.Contains(b, []byte(fmt.Sprint(first.entry["id"]))) {
		t.Errorf("get_thread via relay: %s", b)
	}
}
