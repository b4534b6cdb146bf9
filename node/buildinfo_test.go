package node_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/restarea/restarea/internal/buildinfo"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// A node reports the build it runs where clients look: GET
// /api/v1/cluster (version, commit) and the MCP handshake
// (serverInfo.version). Unset, it is this binary's own.
func TestNodeReportsItsBuild(t *testing.T) {
	n := testnode.Start(t, testnode.WithConfig(func(c *server.Config) {
		c.Version, c.Commit = "v9.8.7-rc.1", "0123456789abcdef0123456789abcdef01234567"
	}))
	resp, err := http.Get(n.URL() + "/api/v1/cluster")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Data struct {
			NodeID  string `json:"node_id"`
			Version string `json:"version"`
			Commit  string `json:"commit"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /api/v1/cluster: %d %v", resp.StatusCode, err)
	}
	if st.Data.NodeID != n.ID() || st.Data.Version != "v9.8.7-rc.1" || st.Data.Commit != "0123456789abcdef0123456789abcdef01234567" {
		t.Fatalf("GET /api/v1/cluster: %+v", st.Data)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "build", Version: "1"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: n.URL() + "/mcp", DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if info := cs.InitializeResult().ServerInfo; info == nil || info.Version != "v9.8.7-rc.1" {
		t.Fatalf("MCP serverInfo: %+v", info)
	}
	mresp, err := http.Get(n.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	wantInfo := `restarea_build_info{commit="0123456789abcdef0123456789abcdef01234567",go_version="` + runtime.Version() + `",version="v9.8.7-rc.1"} 1`
	if !strings.Contains(string(page), wantInfo) {
		t.Fatalf("/metrics lacks %s", wantInfo)
	}

	plain := testnode.Start(t)
	got, err := plain.ClusterStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != buildinfo.Version() || got.Commit != buildinfo.Commit() || plain.Version() != buildinfo.Version() {
		t.Fatalf("unset build: status %q %q, want %q %q", got.Version, got.Commit, buildinfo.Version(), buildinfo.Commit())
	}
}
