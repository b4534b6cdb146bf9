package bench

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/restarea/restarea/mcp"
)

// ToolsListFigure is the size of a node's MCP tools/list result at one
// protocol revision: what an agent reads into its context window before
// its first call.
type ToolsListFigure struct {
	// Revision is the MCP-Protocol-Version sent; "" sends none.
	Revision string `json:"revision"`
	Bytes    int    `json:"bytes"`
}

// toolsListSizes asks the node at url for tools/list once per revision it
// answers. It is a handful of requests, made before any load runs.
func toolsListSizes(ctx context.Context, cl *Client, url string) ([]ToolsListFigure, error) {
	var out []ToolsListFigure
	for _, rev := range append([]string{""}, mcp.Revisions()...) {
		n, err := mcp.ToolsListBytes(ctx, cl.HTTP, strings.TrimRight(url, "/")+"/mcp", rev)
		if err != nil {
			return nil, err
		}
		out = append(out, ToolsListFigure{Revision: rev, Bytes: n})
	}
	return out, nil
}

// largestToolsList is the largest of figs in bytes.
func largestToolsList(figs []ToolsListFigure) int {
	most := 0
	for _, f := range figs {
		most = max(most, f.Bytes)
	}
	return most
}

// writeToolsList prints figs on one line.
func writeToolsList(w io.Writer, figs []ToolsListFigure) {
	if len(figs) == 0 {
		return
	}
	parts := make([]string, len(figs))
	for i, f := range figs {
		rev := f.Revision
		if rev == "" {
			rev = "no version header"
		}
		parts[i] = fmt.Sprintf("%d B at %s", f.Bytes, rev)
	}
	fmt.Fprintf(w, "MCP tools/list result: %s (cap %d B)\n", strings.Join(parts, ", "), mcp.MaxToolsListBytes)
}
