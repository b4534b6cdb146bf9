package certs_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/certs"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/node"
	"github.com/restarea/restarea/transport"
)

// issueTLS issues a certificate for 127.0.0.1 from ca, writes it the way
// `restarea tls node` does and loads it the way `restarea serve` does.
func issueTLS(t *testing.T, ca *certs.CA, name string) *tls.Config {
	t.Helper()
	n, err := ca.Issue(certs.NodeRequest{Name: name, Hosts: []string{"127.0.0.1", "localhost"}, Lifetime: certs.DefaultNodeLifetime})
	if err != nil {
		t.Fatal(err)
	}
	files, err := n.Save(filepath.Join(t.TempDir(), name), false)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := transport.LoadTLS(files.Cert, files.Key, files.CA)
	if err != nil {
		t.Fatalf("LoadTLS %s: %v", name, err)
	}
	return cfg
}

func post(t *testing.T, n *node.Node, title string) string {
	t.Helper()
	req := testkit.Question(title)
	meta := restarea.PostMeta{Source: "203.0.113.7", Channel: restarea.ChannelHTTP}
	res := testkit.EventuallyValue(t, 30*time.Second, "a post through "+n.ID(), func() (restarea.PostResult, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return n.Post(ctx, req, meta)
	})
	return res.Entry.ID
}

func has(n *node.Node, id string) bool {
	_, err := n.GetThread(context.Background(), id, restarea.ReadOptions{})
	return err == nil
}

// Three nodes, each with its own certificate from one CA, form a cluster
// over mutual TLS on loopback and replicate. A fourth node with the right
// cluster secret but a certificate from another CA is refused on the raft
// port and never receives the cluster's data.
func TestClusterFromIssuedCertificates(t *testing.T) {
	ca, err := certs.NewCA("cluster CA", certs.DefaultCALifetime)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ca.Save(t.TempDir(), false); err != nil {
		t.Fatal(err)
	}
	nodeOpts := func(name string, cfg *tls.Config, join []string) testnode.Option {
		return testnode.WithConfig(func(c *server.Config) {
			c.NodeID, c.TLS, c.ClusterSecret, c.JoinURLs = name, cfg, testnode.Secret, join
			c.LeaderWait, c.ApplyTimeout = 3*time.Second, 5*time.Second
		})
	}
	first := testnode.Start(t, nodeOpts("node1", issueTLS(t, ca, "node1"), nil))
	nodes := []*node.Node{first}
	for i := 2; i <= 3; i++ {
		name := fmt.Sprintf("node%d", i)
		n, err := server.Start(testnode.Config(t, nodeOpts(name, issueTLS(t, ca, name), []string{first.URL()})))
		if err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		t.Cleanup(func() { n.Close() })
		nodes = append(nodes, n)
	}
	testnode.WaitMembers(t, nodes, 3)
	testnode.WaitThread(t, nodes, post(t, nodes[2], "over certificates from restarea tls"))

	other, err := certs.NewCA("another CA", certs.DefaultCALifetime)
	if err != nil {
		t.Fatal(err)
	}
	strangerTLS := issueTLS(t, other, "stranger")

	// Every member's raft port refuses the stranger's client certificate.
	// The stranger skips checking the server here, so the refusal can only
	// come from the member.
	for _, n := range nodes {
		c := strangerTLS.Clone()
		c.InsecureSkipVerify = true
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", n.RaftAddr(), c)
		if err == nil {
			conn.SetDeadline(time.Now().Add(3 * time.Second))
			conn.Write([]byte{1})
			_, err = conn.Read(make([]byte, 1))
			conn.Close()
		}
		if err == nil {
			t.Fatalf("%s served a client certificate from another CA", n.ID())
		}
	}
	// And the stranger, checking as a node does, refuses the members.
	c := strangerTLS.Clone()
	c.ServerName = "127.0.0.1"
	if conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", first.RaftAddr(), c); err == nil {
		conn.Close()
		t.Fatal("a certificate from another CA verified the cluster's server certificate")
	}

	// As a real node asking to join with the right secret, it gets nothing.
	stranger, err := server.Start(testnode.Config(t, nodeOpts("stranger", strangerTLS, []string{first.URL()})))
	if err != nil {
		t.Fatalf("start the stranger: %v", err)
	}
	t.Cleanup(func() { stranger.Close() })
	id := post(t, nodes[1], "after the stranger knocked")
	testnode.WaitThread(t, nodes, id)
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if has(stranger, id) || stranger.Ready() == nil {
			t.Fatal("a node with a certificate from another CA received the cluster's data")
		}
	}
	// The leader cannot open a raft connection to it, so it never becomes
	// a member: a voter nobody can reach would still count in the quorum.
	for _, n := range nodes {
		st, err := n.ClusterStatus(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range st.Members {
			if m.ID == "stranger" {
				t.Fatalf("%s lists the stranger as a member", n.ID())
			}
		}
	}
	// The members still commit without it.
	testnode.WaitThread(t, nodes, post(t, nodes[0], "still writable"))
}
