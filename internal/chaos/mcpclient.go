package chaos

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/mcp"
)

// mcpPool keeps one MCP client session per node. The server is stateless
// (docs/contract.md §4), so a session survives its node's restart; a session
// that failed at the transport level is dropped anyway and the next call
// connects afresh, because a killed connection may leave the client's
// stream in a state it does not recover from.
type mcpPool struct {
	urls []string
	hc   *http.Client
	mu   sync.Mutex
	cs   map[int]*sdk.ClientSession
}

func newMCPPool(urls []string, hc *http.Client) *mcpPool {
	return &mcpPool{urls: urls, hc: hc, cs: map[int]*sdk.ClientSession{}}
}

func (p *mcpPool) session(ctx context.Context, node int) (*sdk.ClientSession, error) {
	p.mu.Lock()
	cs := p.cs[node]
	p.mu.Unlock()
	if cs != nil {
		return cs, nil
	}
	cl := sdk.NewClient(&sdk.Implementation{Name: "restarea-chaos", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint: p.urls[node] + "/mcp", HTTPClient: p.hc, DisableStandaloneSSE: true, MaxRetries: -1,
	}, nil)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if old := p.cs[node]; old != nil {
		p.mu.Unlock()
		cs.Close()
		return old, nil
	}
	p.cs[node] = cs
	p.mu.Unlock()
	return cs, nil
}

func (p *mcpPool) drop(node int, cs *sdk.ClientSession) {
	p.mu.Lock()
	if p.cs[node] == cs {
		delete(p.cs, node)
	}
	p.mu.Unlock()
	cs.Close()
}

// call calls tool on node and returns http_status and the structured
// content, or the transport error.
func (p *mcpPool) call(ctx context.Context, node int, tool string, args map[string]any) (int, envelope, error) {
	cs, err := p.session(ctx, node)
	if err != nil {
		if status := refusedStatus(err); status != 0 {
			return status, envelope{}, nil
		}
		return 0, envelope{}, err
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		// A call the client abandoned leaves the session sound; dropping
		// it would fail the other calls in flight on it ("client is
		// closing"), which no server did.
		if ctx.Err() == nil {
			p.drop(node, cs)
		}
		if status := refusedStatus(err); status != 0 {
			return status, envelope{}, nil
		}
		return 0, envelope{}, err
	}
	b, _ := json.Marshal(res.StructuredContent)
	var env envelope
	json.Unmarshal(b, &env)
	return env.HTTPStatus, env, nil
}

// post calls post_entry.
func (p *mcpPool) post(ctx context.Context, node int, req restarea.PostRequest) answer {
	b, _ := json.Marshal(req)
	var args map[string]any
	json.Unmarshal(b, &args)
	status, env, err := p.call(ctx, node, mcp.ToolPostEntry, args)
	if err != nil {
		return callError(ctx, err)
	}
	return classifyPost(status, env)
}

// read calls get_thread or get_reply.
func (p *mcpPool) read(ctx context.Context, node int, typ, id string, strong bool) answer {
	tool := mcp.ToolGetThread
	if typ == restarea.TypeReply {
		tool = mcp.ToolGetReply
	}
	args := map[string]any{"id": id}
	if strong {
		args["consistency"] = "strong"
	}
	status, env, err := p.call(ctx, node, tool, args)
	if err != nil {
		return callError(ctx, err)
	}
	return classifyRead(status, env)
}

// close ends every session.
func (p *mcpPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, cs := range p.cs {
		cs.Close()
		delete(p.cs, k)
	}
}

// refusedStatus is the HTTP status of a request the node refused before
// the MCP session saw it — the public port's bound on expensive requests
// answers 429 or 503 with Retry-After — which the SDK reports only as a
// transport error naming the status: 0 for any other error. Both are
// answers to retry after a pause, as over REST.
func refusedStatus(err error) int {
	switch msg := err.Error(); {
	case strings.Contains(msg, http.StatusText(http.StatusTooManyRequests)):
		return http.StatusTooManyRequests
	case strings.Contains(msg, http.StatusText(http.StatusServiceUnavailable)):
		return http.StatusServiceUnavailable
	}
	return 0
}
