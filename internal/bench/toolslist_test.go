package bench

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/mcp"
)

// TestToolsListSizes: the bench measures tools/list at every revision a
// node answers, reports it in the table's head, and checks it against the
// cap.
func TestToolsListSizes(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewHandler(mcp.Config{Service: testkit.NewFakeService()}))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	figs, err := toolsListSizes(ctx, NewClient(1), ts.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 1+len(mcp.Revisions()) || figs[0].Revision != "" {
		t.Fatalf("figures %+v, want one without a header and one per revision %v", figs, mcp.Revisions())
	}
	for _, f := range figs {
		if f.Bytes <= 0 || f.Bytes > mcp.MaxToolsListBytes {
			t.Errorf("tools/list at %q: %d bytes", f.Revision, f.Bytes)
		}
	}

	r := &Report{ToolsList: figs}
	var buf bytes.Buffer
	r.WriteTable(&buf)
	if !strings.Contains(buf.String(), "MCP tools/list result: ") || !strings.Contains(buf.String(), "B at 2025-06-18") {
		t.Errorf("table lacks the tools/list line:\n%s", buf.String())
	}
	var met bool
	for _, c := range r.checkTargets() {
		if strings.HasPrefix(c.Name, "MCP tools/list") {
			met = c.Met && c.Value == float64(largestToolsList(figs))
		}
	}
	if !met {
		t.Errorf("no met tools/list target in %+v", r.checkTargets())
	}
}
