package client_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/client"
	"github.com/restarea/restarea/client/clienttest"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
)

const adminToken = "client-admin-test-token-0123456789"

// counted is a fault proxy that counts the requests it gets.
type counted struct {
	*clienttest.Proxy
	n atomic.Int64
}

// adminSetup starts one node with the admin API and two fault proxies in
// front of it, and returns an admin client for [p1, p2].
func adminSetup(t *testing.T, token string) (*client.Admin, *counted, *counted, *node.Node) {
	t.Helper()
	n := testnode.Start(t, testnode.WithAdminToken(adminToken))
	p1 := &counted{Proxy: clienttest.New(t, n.URL())}
	p2 := &counted{Proxy: clienttest.New(t, n.URL())}
	for _, p := range []*counted{p1, p2} {
		p.OnRequest(func(*http.Request) { p.n.Add(1) })
	}
	a, err := client.NewAdmin(token, client.Options{
		Servers: []string{p1.URL(), p2.URL()}, MaxAttempts: 4, Deadline: 20 * time.Second,
		AttemptTimeout: 5 * time.Second, BaseBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return a, p1, p2, n
}

func TestAdminReadsFailOver(t *testing.T) {
	a, p1, p2, _ := adminSetup(t, adminToken)
	ctx := context.Background()
	p1.ScriptReads(clienttest.Unavailable)
	if _, err := a.Settings(ctx); err != nil {
		t.Fatalf("settings after a 503 from the first server: %v", err)
	}
	if p1.n.Load() != 1 || p2.n.Load() != 1 {
		t.Fatalf("requests: p1 %d, p2 %d; want one each", p1.n.Load(), p2.n.Load())
	}
	// The client stays on the server that answered; a lost answer moves
	// it back. (Two drops: net/http itself resends a GET once when a
	// reused connection closes without an answer.)
	p2.ScriptReads(clienttest.DropAnswer, clienttest.DropAnswer)
	if _, err := a.Members(ctx); err != nil {
		t.Fatalf("members after a lost answer: %v", err)
	}
	if p1.n.Load() != 2 {
		t.Fatalf("requests: p1 %d, p2 %d; want the second read on p1", p1.n.Load(), p2.n.Load())
	}
}

func TestAdminIdempotentChangeRepeated(t *testing.T) {
	a, p1, p2, ref := adminSetup(t, adminToken)
	ctx := context.Background()
	e := postVia(t, ref.URL())
	// The first hide reaches the node and its answer is lost: hiding
	// again elsewhere is harmless and gives the answer.
	p1.ScriptPosts(clienttest.DropAnswer)
	got, err := a.HideEntry(ctx, e.ID)
	if err != nil || got.Visible || got.ID != e.ID {
		t.Fatalf("hide after a lost answer: %+v, %v", got, err)
	}
	if len(p1.Seen()) != 1 || len(p2.Seen()) != 1 {
		t.Fatalf("posts: p1 %v, p2 %v", p1.Seen(), p2.Seen())
	}
	p2.ScriptPosts(clienttest.UnavailableAfterForward)
	if d, err := a.DeleteEntry(ctx, e.ID); err != nil || !d.Deleted {
		t.Fatalf("delete after a 503: %+v, %v", d, err)
	}
	if _, err := a.Entry(ctx, e.ID, restarea.ConsistencyStrong); restarea.ErrorCode(err) != restarea.CodeNotFound {
		t.Fatalf("entry after delete: %v", err)
	}
}

func TestAdminTransferNotRepeated(t *testing.T) {
	a, p1, p2, _ := adminSetup(t, adminToken)
	p1.ScriptPosts(clienttest.DropAnswer)
	_, err := a.TransferLeadership(context.Background(), "")
	if !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("transfer with a lost answer: %v, want ErrOutcomeUnknown", err)
	}
	if len(p2.Seen()) != 0 {
		t.Fatalf("the transfer was sent again: %v", p2.Seen())
	}
}

func TestAdminUnsentChangeMovesOn(t *testing.T) {
	n := testnode.Start(t, testnode.WithAdminToken(adminToken))
	a, err := client.NewAdmin(adminToken, client.Options{Servers: []string{deadServer(t), n.URL()}, MaxAttempts: 4})
	if err != nil {
		t.Fatal(err)
	}
	// Refused before sending: safe to send to the next server even for a
	// removal. The single node refuses to remove an unknown member.
	_, err = a.RemoveMember(context.Background(), "no-such-member")
	if restarea.ErrorCode(err) != restarea.CodeNotFound {
		t.Fatalf("remove through a dead first server: %v, want not_found from the second", err)
	}
}

func TestAdminRefusalsAreFinal(t *testing.T) {
	a, p1, p2, _ := adminSetup(t, "wrong-token-of-sufficient-length")
	_, err := a.Settings(context.Background())
	if restarea.ErrorCode(err) != restarea.CodeUnauthorized {
		t.Fatalf("wrong token: %v", err)
	}
	if p1.n.Load() != 1 || p2.n.Load() != 0 {
		t.Fatalf("a 401 was retried: p1 %d, p2 %d", p1.n.Load(), p2.n.Load())
	}
	// The public route answers a wrong token with the public view.
	if _, err := a.ClusterStatus(context.Background()); restarea.ErrorCode(err) != restarea.CodeUnauthorized {
		t.Fatalf("cluster status with a wrong token: %v", err)
	}
	for _, tok := range []string{"", "short-token", "sixteen-bytes-ok\nx"} {
		if _, err := client.NewAdmin(tok, client.Options{Servers: []string{"http://127.0.0.1:1"}}); err == nil {
			t.Errorf("NewAdmin(%q) accepted", tok)
		}
	}
}

func TestAdminUnreachable(t *testing.T) {
	a, err := client.NewAdmin(adminToken, client.Options{
		Servers: []string{deadServer(t), deadServer(t)}, MaxAttempts: 4, Deadline: 5 * time.Second,
		BaseBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = a.Settings(context.Background())
	if !errors.Is(err, client.ErrUnreachable) {
		t.Fatalf("dead servers: %v", err)
	}
	if time.Since(start) > 4*time.Second {
		t.Fatalf("took %s to give up on refused connections", time.Since(start))
	}
	if _, err := a.Status(context.Background()); !errors.Is(err, client.ErrUnreachable) {
		t.Fatalf("status of dead servers: %v", err)
	}
}

func TestAdminBackup(t *testing.T) {
	a, p1, p2, _ := adminSetup(t, adminToken)
	ctx := context.Background()
	p1.ScriptReads(clienttest.Unavailable)
	var buf bytes.Buffer
	n, err := a.Backup(ctx, &buf)
	if err != nil || n == 0 || int64(buf.Len()) != n {
		t.Fatalf("backup after a 503: %d bytes, %v", n, err)
	}
	// A copy cut once bytes were written is an error, not a silent
	// restart that would append a second copy to the first half.
	p2.ScriptReads(clienttest.CutBody)
	buf.Reset()
	before := p1.n.Load()
	if _, err := a.Backup(ctx, &buf); err == nil || !strings.Contains(err.Error(), "cut after") {
		t.Fatalf("cut backup: %v", err)
	}
	if p1.n.Load() != before {
		t.Fatal("a cut backup was restarted on another server")
	}
}

func TestAdminStatusSingleNode(t *testing.T) {
	a, _, _, ref := adminSetup(t, adminToken)
	// A node records its URL through the log moments after it leads;
	// until then its row says it has none. Its first commands as leader
	// (URL, limits) may also be committed but not yet applied when it
	// answers, so a lag above 0 is polled away too.
	var v client.ClusterView
	testkit.Poll(context.Background(), 30*time.Second, func() error {
		var err error
		v, err = a.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Nodes) != 1 {
			return nil // checked below
		}
		if v.Nodes[0].URL != "" {
			if v.Nodes[0].Lag != nil && *v.Nodes[0].Lag == 0 {
				return nil
			}
			return errors.New("lagging")
		}
		if v.Nodes[0].Error != "the cluster has no URL recorded for this member" {
			t.Fatalf("member without a URL: %+v", v.Nodes[0])
		}
		return errors.New("no URL yet")
	})
	if len(v.Nodes) != 1 || !v.Nodes[0].Reachable || v.Nodes[0].ID != ref.ID() || v.Nodes[0].Lag == nil || *v.Nodes[0].Lag != 0 || v.LeaderID != ref.ID() {
		t.Fatalf("status: %+v", v)
	}
}

// postVia posts a question to the node at base and returns it.
func postVia(t *testing.T, base string) restarea.Entry {
	t.Helper()
	c, _ := newClient(t, []string{base})
	res, err := c.Post(context.Background(), testkit.Question("admin test"))
	if err != nil || res.Outcome != client.Confirmed {
		t.Fatalf("post: %+v, %v", res, err)
	}
	return restarea.Entry{ID: res.ID}
}

func deadServer(t *testing.T) string { return "http://" + testkit.FreeAddr(t) } // nothing listens there
