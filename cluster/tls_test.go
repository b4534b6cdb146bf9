package cluster_test

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// With mutual TLS the cluster forms and replicates, and the raft port
// refuses anyone without a certificate from the cluster's CA.
func TestMutualTLSCluster(t *testing.T) {
	tlsCfg := testnode.MutualTLS(t)
	nodes := testnode.StartCluster(t, 3, testnode.WithConfig(func(c *server.Config) {
		fastFailover(c)
		c.TLS = tlsCfg
	}))
	res := testnode.Post(t, nodes[2], testkit.Question("over mutual TLS"))
	testnode.WaitThread(t, nodes, res.Entry.ID)

	addr := nodes[0].RaftAddr()
	// A plain TCP stranger speaking the raft kind byte gets nothing back.
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn.Write([]byte{1, 0, 0, 0})
	conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	if n, _ := conn.Read(make([]byte, 16)); n != 0 {
		t.Fatalf("plain stranger got %d bytes from the raft port", n)
	}
	conn.Close()
	// A TLS client without a certificate is refused.
	tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err == nil {
		tc.SetReadDeadline(time.Now().Add(3 * time.Second))
		tc.Write([]byte{1})
		_, err = tc.Read(make([]byte, 1))
		tc.Close()
	}
	if err == nil {
		t.Fatal("TLS client without a certificate was served")
	}
	st, _ := nodes[1].ClusterStatus(context.Background())
	if len(st.Members) != 3 {
		t.Fatalf("members after strangers: %+v", st.Members)
	}
}
