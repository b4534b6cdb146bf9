package e2e_test

import (
	"net/http"
	"testing"

	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/mcp"
)

// TestToolsListSizeOnNode: a real node's tools/list, asked as a client of
// each revision it answers (and without a version header), is at most
// mcp.MaxToolsListBytes: it goes whole into an agent's context window.
func TestToolsListSizeOnNode(t *testing.T) {
	n := testnode.Start(t)
	for _, rev := range append([]string{""}, mcp.Revisions()...) {
		size, err := mcp.ToolsListBytes(ctx(t), http.DefaultClient, n.URL()+"/mcp", rev)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("tools/list at %q: %d bytes", rev, size)
		if size > mcp.MaxToolsListBytes {
			t.Errorf("tools/list at %q: %d bytes, over %d", rev, size, mcp.MaxToolsListBytes)
		}
	}
}
