package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/mcp"
)

// postHTTPS posts req through base's REST API with hc and returns the
// entry created.
func postHTTPS(t *testing.T, hc *http.Client, base string, req restarea.PostRequest) restarea.Entry {
	t.Helper()
	body, _ := json.Marshal(req)
	resp, err := hc.Post(base+"/api/v1/entries", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var a struct {
		Data restarea.Entry `json:"data"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &a) != nil {
		t.Fatalf("post through %s: %d %s", base, resp.StatusCode, b)
	}
	return a.Data
}

// A node given a certificate serves its whole surface over HTTPS only:
// REST (over HTTP/2) and /mcp with a client that trusts the CA, entry
// urls in https://; a plain request, a client without the CA and TLS 1.1
// are refused.
func TestPublicPortHTTPS(t *testing.T) {
	h := testnode.NewHTTPS(t)
	n := testnode.Start(t, h.Option(t))
	if !strings.HasPrefix(n.URL(), "https://127.0.0.1:") {
		t.Fatalf("the node's URL is %q, want https://", n.URL())
	}
	hc := h.Client()

	resp, err := hc.Get(n.URL() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		t.Fatalf("GET /healthz over HTTPS: %d %s, want 200 over HTTP/2", resp.StatusCode, resp.Proto)
	}
	q := postHTTPS(t, hc, n.URL(), testkit.Question("asked over https"))
	if !strings.HasPrefix(q.URL, "https://") {
		t.Errorf("entry url %q: the default public URL should be https:// when the port serves HTTPS", q.URL)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "https-test", Version: "1"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: n.URL() + "/mcp", HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("MCP over HTTPS: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolGetThread, Arguments: map[string]any{"id": q.ID}})
	if err != nil || res.IsError {
		t.Fatalf("get_thread over HTTPS: %v %+v", err, res)
	}
	if b, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(b), "asked over https") {
		t.Fatalf("get_thread over HTTPS answered %s", b)
	}

	addr := strings.TrimPrefix(n.URL(), "https://")
	plain, err := http.Get("http://" + addr + "/healthz")
	if err == nil {
		plain.Body.Close()
		if plain.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to the HTTPS port: %d, want 400", plain.StatusCode)
		}
	}
	if _, err := http.Get(n.URL() + "/healthz"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client without the CA: %v, want a certificate error", err)
	}
	old, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: h.Roots, MaxVersion: tls.VersionTLS11})
	if err == nil {
		old.Close()
		t.Error("a TLS 1.1 handshake succeeded; the public port wants TLS 1.2 or later")
	}
}

// With TLS on top of the connection caps, connections are still counted
// by source before any handshake, and the one over the cap reads its 429
// over TLS.
func TestPublicPortHTTPSConnectionCap(t *testing.T) {
	h := testnode.NewHTTPS(t)
	n := testnode.Start(t, h.Option(t), testnode.WithConfig(func(c *server.Config) { c.MaxConnsPerSource = 2 }))
	addr := strings.TrimPrefix(n.URL(), "https://")
	status := func(c net.Conn) (int, error) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
			return 0, err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	dial := func() *tls.Conn {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: h.Roots, NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	var held []net.Conn
	for i := range 2 {
		c := dial()
		held = append(held, c)
		if got, err := status(c); err != nil || got != http.StatusOK {
			t.Fatalf("connection %d within the cap: %d %v", i+1, got, err)
		}
	}
	over := dial()
	held = append(held, over)
	got, err := status(over)
	if err != nil || got != http.StatusTooManyRequests {
		t.Fatalf("the connection over the per-source cap: %d %v, want 429 read over TLS", got, err)
	}
	// Once the held connections close, their slots are free again; then
	// two raw TCP connections that never start a handshake take them: the
	// cap counts connections, not finished handshakes.
	for _, c := range held {
		c.Close()
	}
	testkit.Eventually(t, 20*time.Second, "the freed slots", func() error {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: h.Roots, NextProtos: []string{"http/1.1"}})
		if err != nil {
			return err
		}
		defer c.Close()
		if got, err := status(c); err != nil || got != http.StatusOK {
			return fmt.Errorf("%d %v", got, err)
		}
		return nil
	})
	// open waits until the listener holds want connections besides the
	// one that asks, read from another source so that asking takes no
	// slot of 127.0.0.1's.
	other := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: h.Roots},
		DialContext:       (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext,
		DisableKeepAlives: true,
	}}
	open := func(want int) {
		t.Helper()
		testkit.Eventually(t, 20*time.Second, fmt.Sprintf("%d connections open", want), func() error {
			r := testkit.Do(t, other, http.MethodGet, n.URL()+"/metrics", "")
			for _, line := range strings.Split(r.Body, "\n") {
				if v, ok := strings.CutPrefix(line, "restarea_http_connections_open "); ok {
					if v != strconv.Itoa(want+1) {
						return fmt.Errorf("open %s, want %d and the one asking", v, want)
					}
					return nil
				}
			}
			return fmt.Errorf("no restarea_http_connections_open on /metrics")
		})
	}
	open(0)
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	open(2)
	if got, err := status(dial()); err != nil || got != http.StatusTooManyRequests {
		t.Fatalf("behind two connections without a handshake: %d %v, want 429", got, err)
	}
}

// A cluster whose public ports serve HTTPS forms through them (a join
// over https://, verified with the CA the nodes are given), records
// https:// member URLs, and a post through a follower is forwarded to
// the leader and read back from every node.
func TestClusterOverHTTPS(t *testing.T) {
	h := testnode.NewHTTPS(t)
	nodes := testnode.StartCluster(t, 3, h.Option(t))
	// The first node records its own URL through the log moments after
	// it leads; the others with their joins.
	testkit.Eventually(t, 20*time.Second, "every member recorded with an https:// URL", func() error {
		st, err := nodes[2].ClusterStatus(context.Background())
		if err != nil {
			return err
		}
		for _, m := range st.Members {
			if !strings.HasPrefix(m.URL, "https://") {
				return fmt.Errorf("member %s recorded with URL %q", m.ID, m.URL)
			}
		}
		return nil
	})
	leader := testnode.Leader(t, nodes)
	var follower = nodes[0]
	for _, n := range nodes {
		if n != leader {
			follower = n
			break
		}
	}
	q := postHTTPS(t, h.Client(), follower.URL(), testkit.Question("forwarded over an https cluster"))
	testnode.WaitThread(t, nodes, q.ID)
}
