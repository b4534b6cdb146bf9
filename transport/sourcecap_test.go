package transport

import (
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// One source cannot hold every handshake slot: past MaxPendingPerSource
// its next connection is closed at once (counted as "source"), while
// another source still gets a slot and a member still joins.
func TestPendingConnectionsCappedPerSource(t *testing.T) {
	const perSource = 3
	a, err := Listen(Config{
		BindAddr: "127.0.0.1:0", Secret: clusterSecret, Logger: testLogger(t),
		HandshakeTimeout: time.Minute, MaxPending: 8, MaxPendingPerSource: perSource,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	silent := func(from string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", a.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	for range perSource {
		silent("127.0.0.1")
	}
	waitPending(t, a, perSource)
	expectClosed(t, silent("127.0.0.1"), "a connection over the source's cap")
	if n := a.Stats().Refused[RefusedSource]; n != 1 {
		t.Fatalf("refused by source = %d, want 1", n)
	}
	silent("127.0.0.2") // another source still gets a slot
	waitPending(t, a, perSource+1)

	b, err := Listen(Config{BindAddr: "127.0.0.3:0", Secret: clusterSecret, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	got := acceptOne(a, 10*time.Second)
	conn, err := b.RaftLayer().Dial(raft.ServerAddress(a.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatalf("a member's dial while one source holds its cap: %v", err)
	}
	conn.Close()
	if c := <-got; c == nil {
		t.Fatal("the member's connection was not accepted")
	} else {
		c.Close()
	}
}

func TestSourceOf(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7:9":              "192.0.2.7/32",
		"[::ffff:192.0.2.7]:9":     "192.0.2.7/32",
		"[2001:db8:1:2:3::4]:9":    "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:1": "2001:db8:1:2::/64",
	} {
		ap, err := net.ResolveTCPAddr("tcp", in)
		if err != nil {
			t.Fatal(err)
		}
		if got := sourceOf(ap).String(); got != want {
			t.Errorf("sourceOf(%s) = %s, want %s", in, got, want)
		}
	}
}

// Every refusal reason has its own counter.
func TestEveryReasonCounted(t *testing.T) {
	if len(RefusalReasons) != len(counters{}.refused) {
		t.Fatalf("%d reasons, %d counters", len(RefusalReasons), len(counters{}.refused))
	}
}

// waitPending waits until a holds want connections in their handshake.
func waitPending(t *testing.T, a *Mux, want int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); a.Stats().Pending != want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pending = %d, want %d", a.Stats().Pending, want)
		}
	}
}
