package cluster_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/restarea/restarea/cluster"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
	"github.com/restarea/restarea/transport"
)

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// rssAnon is the process's anonymous resident memory (Linux), 0 elsewhere.
func rssAnon() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "RssAnon:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

const mib = 1 << 20

// 200 connections of each kind an outsider can open — unsigned joins
// announcing 8 MiB bodies on the public port, joins with forged signature
// headers streaming a chunked body, internal-channel requests on the
// cluster port, silent raft-kind connections — each sending (or trying to
// send) 1 MiB: the node's memory stays flat, and normal requests are
// served meanwhile.
func TestUnauthenticatedFloodLeavesMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP: -short: opens 800 connections")
	}
	// Every flooding connection comes from 127.0.0.1: the public port's
	// per-source connection cap (tested in node) would refuse most of them
	// before the guard is reached, so it is lifted to measure the guard.
	n := testnode.Start(t, testnode.WithConfig(func(c *server.Config) { c.ClusterSecret, c.MaxConnsPerSource = testnode.Secret, -1 }))
	const conns = 200
	payload := bytes.Repeat([]byte("x"), mib)
	httpAddr, raftAddr := n.HTTPAddr(), n.RaftAddr()
	heapBefore, rssBefore := heapInUse(), rssAnon()

	fresh := func() string {
		return fmt.Sprintf("%s: %d\r\n%s: %s\r\n%s: %s\r\n",
			transport.HeaderTimestamp, time.Now().UnixMilli(), transport.HeaderNonce, strings.Repeat("ab", 16),
			transport.HeaderSignature, strings.Repeat("00", 32))
	}
	kinds := []struct {
		name, addr string
		head       func() string
		body       bool
	}{
		{"unsigned join, 8 MiB declared", httpAddr, func() string {
			return "POST " + cluster.PathJoin + " HTTP/1.1\r\nHost: x\r\nContent-Length: 8388608\r\n\r\n"
		}, true},
		{"forged-signature join, chunked", httpAddr, func() string {
			return "POST " + cluster.PathJoin + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n" + fresh() + "\r\n" + fmt.Sprintf("%x\r\n", mib)
		}, true},
		{"internal channel, no handshake", raftAddr, func() string {
			return "\x02POST /internal/v1/apply-batch HTTP/1.1\r\nHost: x\r\nContent-Length: 8388608\r\n" + fresh() + "\r\n"
		}, true},
		{"silent raft kind", raftAddr, func() string { return "\x01" }, false},
	}
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	sent := map[string]int64{}
	for _, k := range kinds {
		for i := range conns {
			// The cluster port caps the handshakes of one source (tested
			// in transport): the flood comes from many loopback addresses,
			// as a flood from many machines would, so that it reaches the
			// guard, and the node's own peers (127.0.0.1) keep their share.
			d := net.Dialer{Timeout: 5 * time.Second}
			if k.addr == raftAddr {
				d.LocalAddr = &net.TCPAddr{IP: net.IPv4(127, 0, byte(1+i/250), byte(2+i%250))}
			}
			c, err := d.Dial("tcp", k.addr)
			if err != nil {
				t.Fatalf("%s: %v", k.name, err)
			}
			open = append(open, c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.SetWriteDeadline(time.Now().Add(3 * time.Second))
				m, _ := c.Write([]byte(k.head()))
				if k.body {
					w, _ := c.Write(payload)
					m += w
				}
				mu.Lock()
				sent[k.name] += int64(m)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	heapDuring, rssDuring := heapInUse(), rssAnon()

	// Normal requests are served while all of that is open.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mux, err := transport.Listen(transport.Config{BindAddr: "127.0.0.1:0", Secret: testnode.Secret})
	if err != nil {
		t.Fatal(err)
	}
	defer mux.Close()
	peer := &cluster.Client{Internal: mux.HTTPClient(5 * time.Second), Public: mux.HTTPClient(0), Secret: testnode.Secret}
	peer.Public.Transport = nil // plain HTTP for the public port
	if p, err := peer.PeerAt(ctx, raftAddr); err != nil || p.ID != n.ID() {
		t.Fatalf("internal channel during the flood: %+v %v", p, err)
	}
	if p, err := peer.Peer(ctx, n.URL()); err != nil || p.ID != n.ID() {
		t.Fatalf("public peer path during the flood: %+v %v", p, err)
	}
	res := testnode.Post(t, n, testkit.Question("during the flood"))
	if res.Entry.ID == "" {
		t.Fatal("post during the flood failed")
	}

	// What the public port answered: refusals, not a read of 8 MiB.
	answered := 0
	for _, c := range open[:2*conns] {
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if line, err := bufio.NewReader(c).ReadString('\n'); err == nil && (strings.Contains(line, " 401 ") || strings.Contains(line, " 413 ")) {
			answered++
		}
	}
	grew := int64(heapDuring) - int64(heapBefore)
	t.Logf("heap in use: %.1f MiB before, %.1f MiB with %d connections open (%+.1f MiB); RssAnon %.1f → %.1f MiB",
		float64(heapBefore)/mib, float64(heapDuring)/mib, len(open), float64(grew)/mib, float64(rssBefore)/mib, float64(rssDuring)/mib)
	for _, k := range kinds {
		t.Logf("%-32s %d connections, %.1f MiB written by the clients", k.name, conns, float64(sent[k.name])/mib)
	}
	t.Logf("public port answered 401/413 to %d of %d; cluster port refused: %v protocol, %v pending",
		answered, 2*conns, metric(t, n, "restarea_cluster_conn_refused_total", map[string]string{"reason": "protocol"}),
		metric(t, n, "restarea_cluster_conn_pending", nil))
	if grew > 32*mib {
		t.Fatalf("heap grew by %.1f MiB with %d unauthenticated connections", float64(grew)/mib, len(open))
	}
	if got := metric(t, n, "restarea_cluster_conn_refused_total", map[string]string{"reason": "protocol"}); got < conns {
		t.Fatalf("internal-channel connections refused: %v, want %d", got, conns)
	}
}
