package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxToolsListBytes bounds the result of tools/list (the JSON-RPC result
// member, as a node sends it) at every revision: it is read into an
// agent's context window before any call.
const MaxToolsListBytes = 8192

// Revisions returns the MCP revisions a node answers, oldest first: every
// revision the SDK supports.
func Revisions() []string {
	revs := sdk.SupportedProtocolVersions()
	slices.Sort(revs)
	return revs
}

// ToolsListBytes asks endpoint (a node's /mcp URL) for tools/list the way
// a stateless client of revision rev does (rev "" sends no version
// header), and returns the size in bytes of the result member of the
// answer.
func ToolsListBytes(ctx context.Context, hc *http.Client, endpoint, rev string) (int, error) {
	params := map[string]any{}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if rev != "" {
		req.Header.Set(protocolVersionHeader, rev)
	}
	if rev >= revisionWithCache {
		// From this revision on a request carries the protocol version and
		// client in its own _meta, and names its method in a header.
		req.Header.Set("Mcp-Method", "tools/list")
		params["_meta"] = map[string]any{
			sdk.MetaKeyProtocolVersion:    rev,
			sdk.MetaKeyClientInfo:         map[string]any{"name": "restarea-size", "version": "1"},
			sdk.MetaKeyClientCapabilities: map[string]any{},
		}
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params})
	if err != nil {
		return 0, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxShapedBytes))
	if err != nil {
		return 0, err
	}
	var answer struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return 0, fmt.Errorf("tools/list at %q: %d, not a JSON-RPC answer: %.200q", rev, resp.StatusCode, raw)
	}
	if answer.Error != nil || len(answer.Result) == 0 {
		return 0, fmt.Errorf("tools/list at %q: %d, no result: %.200s", rev, resp.StatusCode, raw)
	}
	return len(answer.Result), nil
}
