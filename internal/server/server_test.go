package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// The public listener caps connections per source (and in total), counts
// them in /metrics, and every answer, whatever serves it, says nosniff.
func TestPublicListenerCapsAndHeaders(t *testing.T) {
	n := testnode.Start(t, testnode.WithConfig(func(c *server.Config) { c.MaxConnsPerSource = 3 }))
	addr := strings.TrimPrefix(n.URL(), "http://")
	var conns []net.Conn
	status := func(c net.Conn) int {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
			return 0
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
		want := http.StatusOK
		if i == 3 {
			want = http.StatusTooManyRequests
		}
		if got := status(c); got != want {
			t.Fatalf("connection %d: %d, want %d", i+1, got, want)
		}
	}
	for _, c := range conns {
		c.Close()
	}
	// The freed slot is reusable once the server has seen the close.
	testkit.Eventually(t, 20*time.Second, "the freed slot", func() error {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		got := status(c)
		c.Close()
		if got != http.StatusOK {
			return fmt.Errorf("status %d", got)
		}
		return nil
	})

	resp, err := http.Get(n.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"restarea_http_connections_open ", `restarea_http_connections_refused_total{cap="per_source"} `, `restarea_http_connections_refused_total{cap="total"} 0`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(string(b), `restarea_http_connections_refused_total{cap="per_source"} 0`) {
		t.Error("the refused connection is not counted")
	}
	for _, path := range []string{"/metrics", "/mcp", "/", "/api/v1/threads", "/threads/x.md"} {
		resp, err := http.Get(n.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q", path, got)
		}
	}
}

// A page of the public URL's origin may post even behind a proxy that
// passes another Host; another site may not.
func TestPublicURLOriginAllowed(t *testing.T) {
	n := testnode.Start(t, testnode.WithConfig(func(c *server.Config) { c.PublicURL = "https://board.example" }))
	body := `{"request_id":"6f1c1f3e-1111-4a4a-8b8b-123456789abc","type":"question","title":"t","body":"b","actor":{"name":"n"},"submission_mode":"manual"}`
	for origin, want := range map[string]int{"https://board.example": http.StatusCreated, "https://evil.example": http.StatusForbidden} {
		req, _ := http.NewRequest(http.MethodPost, n.URL()+"/api/v1/entries", strings.NewReader(body))
		req.Header.Set("Origin", origin)
		req.Header.Set("Content-Type", "text/plain")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Origin %s: %d, want %d", origin, resp.StatusCode, want)
		}
	}
}

// The bound on expensive requests is on by default: its gauge is on
// /metrics, and the pages and reads it covers are served through it.
func TestExpensiveRequestsGated(t *testing.T) {
	n := testnode.Start(t, testnode.WithConfig(func(c *server.Config) { c.MaxExpensive, c.MaxExpensivePerSource = 0, 0 }))
	for _, path := range []string{"/", "/api/v1/threads", "/feed.atom"} {
		if r := testkit.Get(t, n.URL()+path); r.Status != http.StatusOK {
			t.Fatalf("GET %s: %d", path, r.Status)
		}
	}
	if m := testkit.Get(t, n.URL()+"/metrics").Body; !strings.Contains(m, "restarea_http_expensive_in_flight 0") {
		t.Fatalf("no restarea_http_expensive_in_flight 0 on /metrics")
	}
}
