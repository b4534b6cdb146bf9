package mcp

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/restarea/restarea/internal/testkit"
)

// TestRevisionsAnswered: the revisions the tests walk are exactly those
// the SDK supports (Revisions) and a request without a version header.
func TestRevisionsAnswered(t *testing.T) {
	if want := append([]string{""}, Revisions()...); !slices.Equal(revisions, want) {
		t.Errorf("revisions tested %q, the SDK answers %q", revisions, want)
	}
}

// TestToolsListSize: tools/list stays within MaxToolsListBytes at every
// revision, measured as a node sends it.
func TestToolsListSize(t *testing.T) {
	url := serve(t, Config{Service: testkit.NewFakeService()})
	for _, rev := range revisions {
		n, err := ToolsListBytes(testCtx(t), http.DefaultClient, url, rev)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("tools/list at %q: %d bytes", rev, n)
		if n > MaxToolsListBytes {
			t.Errorf("tools/list at %q is %d bytes, over %d", rev, n, MaxToolsListBytes)
		}
	}
}

// TestGuideStatedOnce: the retry procedure and find_my_post are in the
// instructions and the guide resource at every revision, and in no tool.
func TestGuideStatedOnce(t *testing.T) {
	url := serve(t, Config{Service: testkit.NewFakeService()})
	for _, rev := range revisions {
		handshake, params := "initialize", map[string]any{
			"protocolVersion": rev, "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "raw", "version": "1"},
		}
		if rev == "" {
			params["protocolVersion"] = "2025-03-26"
		}
		if rev >= revisionWithCache {
			handshake, params = "server/discover", nil
		}
		init := rpcAt(t, url, rev, bothTypes, handshake, params)
		if got, _ := init.result()["instructions"].(string); !strings.Contains(got, retryProcedure) || !strings.Contains(got, findMyPost) || !strings.Contains(got, GuideURI) {
			t.Errorf("%s at %q: instructions lack the guide: %.300s", handshake, rev, init.raw)
		}
		if caps, _ := init.result()["capabilities"].(map[string]any); caps["resources"] == nil {
			t.Errorf("%s at %q: no resources capability: %.300s", handshake, rev, init.raw)
		}

		list := rpcAt(t, url, rev, bothTypes, "resources/list", nil)
		resources, _ := list.result()["resources"].([]any)
		if len(resources) != 1 || resources[0].(map[string]any)["uri"] != GuideURI {
			t.Errorf("resources/list at %q: %.300s", rev, list.raw)
		}
		read := rpcAt(t, url, rev, bothTypes, "resources/read", map[string]any{"uri": GuideURI})
		contents, _ := read.result()["contents"].([]any)
		if len(contents) != 1 || contents[0].(map[string]any)["text"] != guideText {
			t.Errorf("resources/read at %q: %.300s", rev, read.raw)
		}
		if _, ttl := read.result()["ttlMs"]; ttl != (rev >= revisionWithCache) {
			t.Errorf("resources/read at %q: ttlMs present %v: %.300s", rev, ttl, read.raw)
		}
		missing := rpcAt(t, url, rev, bothTypes, "resources/read", map[string]any{"uri": "restarea://guide/nope"})
		if missing.errorCode() == 0 {
			t.Errorf("resources/read of an unknown uri at %q: %.300s", rev, missing.raw)
		}
	}
	for _, tool := range Tools() {
		for _, full := range []string{"Safe retries:", "find_my_post (you lost"} {
			if strings.Contains(tool.Description, full) {
				t.Errorf("%s repeats %q", tool.Name, full)
			}
		}
	}
}

// TestRelayGuide: the stdio relay lists and reads the same guide, and
// gives the same instructions, without asking a node.
func TestRelayGuide(t *testing.T) {
	cs := relayClient(t, []string{deadURL(t)})
	if got := cs.InitializeResult().Instructions; got != instructions {
		t.Errorf("relay instructions: %.300q", got)
	}
	list, err := cs.ListResources(testCtx(t), nil)
	if err != nil || len(list.Resources) != 1 || list.Resources[0].URI != GuideURI {
		t.Fatalf("relay resources: %v %+v", err, list)
	}
	read, err := cs.ReadResource(testCtx(t), &sdk.ReadResourceParams{URI: GuideURI})
	if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != guideText {
		t.Fatalf("relay guide: %v %+v", err, read)
	}
}
