package transport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/restarea/restarea/internal/testkit"
)

// fakeClock is the v1 memory's clock in tests: it moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// verNode is a Mux with a secret and its log, for the version tests.
type verNode struct {
	*Mux
	log *testkit.SyncBuffer
}

// listenVer opens a Mux with the cluster secret, adjusted by opt, logging
// both to the test and to a buffer the test can search.
func listenVer(t *testing.T, opt func(*Config)) verNode {
	t.Helper()
	buf := &testkit.SyncBuffer{}
	cfg := Config{
		BindAddr:         "127.0.0.1:0",
		Secret:           clusterSecret,
		HandshakeTimeout: 5 * time.Second,
		Logger:           slog.New(slog.NewTextHandler(io.MultiWriter(testWriter(t), buf), &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if opt != nil {
		opt(&cfg)
	}
	m, err := Listen(cfg)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return verNode{m, buf}
}

// legacy makes a Mux speak exactly as release v0.1.0 did.
func legacy(c *Config) { c.legacyV1 = true }

func versions(min, max uint16) func(*Config) {
	return func(c *Config) { c.Versions = VersionRange{min, max} }
}

// roundTrip opens a raft connection from b to a and an internal-channel
// request, and checks both carry data. a's internal channel must be served.
func roundTrip(t *testing.T, a, b *Mux, name string) {
	t.Helper()
	got := acceptOne(a, 10*time.Second)
	conn, err := b.RaftLayer().Dial(raft.ServerAddress(a.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatalf("raft Dial: %v", err)
	}
	defer conn.Close()
	conn.Write([]byte("raft bytes"))
	in := <-got
	if in == nil {
		t.Fatal("nothing accepted")
	}
	defer in.Close()
	buf := make([]byte, 10)
	in.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(in, buf); err != nil || string(buf) != "raft bytes" {
		t.Fatalf("read %q, %v", buf, err)
	}
	c := b.HTTPClient(5 * time.Second)
	defer c.CloseIdleConnections()
	if got := get(t, c, "http://"+a.Addr().String()+"/x"); got != "pong from "+name+" /x" {
		t.Fatalf("internal channel: %q", got)
	}
}

// established reads one counter of Stats.Established.
func established(m *Mux, dir string, v uint16) uint64 {
	return m.Stats().Established[Negotiated{dir, v}]
}

// Two nodes of this release negotiate version 2 on both kinds, with and
// without TLS.
func TestNewNodesNegotiateV2(t *testing.T) {
	for _, withTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", withTLS), func(t *testing.T) {
			var ta, tb *tls.Config
			if withTLS {
				p := newPKI(t)
				ta, tb = p.nodeTLS("a"), p.nodeTLS("b")
			}
			a := listenVer(t, func(c *Config) { c.TLS = ta })
			b := listenVer(t, func(c *Config) { c.TLS = tb })
			serveRPC(t, a.Mux, "a")
			roundTrip(t, a.Mux, b.Mux, "a")
			if n := established(b.Mux, DirectionOut, 2); n != 2 {
				t.Fatalf("b's outgoing connections in version 2: %d; want 2 (raft, internal); stats %+v", n, b.Stats())
			}
			testkit.Eventually(t, 5*time.Second, "a counts 2 incoming version-2 connections", func() error {
				if n := established(a.Mux, DirectionIn, 2); n != 2 {
					return fmt.Errorf("%d; stats %+v", n, a.Stats())
				}
				return nil
			})
			if b.v1.size() != 0 {
				t.Fatal("a version-2 peer was remembered as version 1 only")
			}
		})
	}
}

// The legacy acceptor is release v0.1.0's on the wire: it reads the kind
// byte and four bytes of magic, and closes without writing when they are
// "RAU2" — what the fallback relies on.
func TestLegacyAcceptorClosesAtV2Greeting(t *testing.T) {
	old := listenVer(t, legacy)
	conn, err := net.Dial("tcp", old.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	a := newConnAuth(clusterSecret, ThisRelease, false)
	hello, _, err := a.helloV2(kindRaft, Identity{})
	if err != nil {
		t.Fatal(err)
	}
	conn.Write(hello)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := io.ReadAll(conn)
	if len(n) != 0 || (err != nil && !errors.Is(err, syscall.ECONNRESET)) {
		t.Fatalf("old acceptor answered %q, %v; want a close without a byte", n, err)
	}
	testkit.Eventually(t, 5*time.Second, "the old acceptor counts a protocol refusal", func() error {
		if s := old.Stats(); s.Refused[RefusedProtocol] != 1 {
			return fmt.Errorf("refusals %v", s.Refused)
		}
		return nil
	})
}

// A new dialer meets an acceptor that speaks only version 1: the version-2
// probe is refused, it falls back to version 1 and works, remembers the
// peer (no probe on the next connections), and probes again once the
// memory expires.
func TestNewDialerFallsBackToV1(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	old := listenVer(t, legacy)
	b := listenVer(t, func(c *Config) { c.now = clock.Now })
	serveRPC(t, old.Mux, "old")
	probes := func() uint64 { return old.Stats().Refused[RefusedProtocol] }

	roundTrip(t, old.Mux, b.Mux, "old")
	if n := established(b.Mux, DirectionOut, 1); n != 2 {
		t.Fatalf("b's outgoing version-1 connections: %d; want 2; stats %+v", n, b.Stats())
	}
	if !b.v1.speaksV1Only(old.Addr().String()) {
		t.Fatal("the old peer was not remembered")
	}
	if n := probes(); n != 1 {
		t.Fatalf("the old node refused %d version-2 probes; want 1", n)
	}
	if s := b.Stats(); s.DialAuthFailed != 0 || s.Refused[RefusedVersion] != 0 {
		t.Fatalf("a fallback counted as a failure: %+v", s)
	}
	for range 3 {
		conn, err := b.RaftLayer().Dial(raft.ServerAddress(old.Addr().String()), 5*time.Second)
		if err != nil {
			t.Fatalf("Dial while remembered: %v", err)
		}
		conn.Close()
	}
	if n := probes(); n != 1 {
		t.Fatalf("probes while remembered: %d; want still 1", n)
	}

	clock.Add(v1MemoryFor)
	conn, err := b.RaftLayer().Dial(raft.ServerAddress(old.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatalf("Dial after the memory expired: %v", err)
	}
	conn.Close()
	if n := probes(); n != 2 {
		t.Fatalf("probes after the memory expired: %d; want 2", n)
	}
	if n := established(b.Mux, DirectionOut, 1); n != 6 {
		t.Fatalf("b's outgoing version-1 connections: %d; want 6", n)
	}
}

// An upgraded peer at a remembered address is spoken to in version 2 once
// the memory expires.
func TestUpgradedPeerGetsV2AfterMemory(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	a := listenVer(t, nil)
	b := listenVer(t, func(c *Config) { c.now = clock.Now })
	addr := a.Addr().String()
	b.v1.remember(addr) // as if a had run v0.1.0 until just now
	conn, err := b.RaftLayer().Dial(raft.ServerAddress(addr), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	clock.Add(v1MemoryFor)
	conn, err = b.RaftLayer().Dial(raft.ServerAddress(addr), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if s := b.Stats(); s.Established[Negotiated{DirectionOut, 1}] != 1 || s.Established[Negotiated{DirectionOut, 2}] != 1 {
		t.Fatalf("established %v; want one in version 1 (remembered) and one in version 2", s.Established)
	}
}

// A dialer of release v0.1.0 reaches a new acceptor in version 1 on both
// kinds.
func TestOldDialerToNewAcceptor(t *testing.T) {
	a := listenVer(t, nil)
	old := listenVer(t, legacy)
	serveRPC(t, a.Mux, "a")
	roundTrip(t, a.Mux, old.Mux, "a")
	testkit.Eventually(t, 5*time.Second, "a counts 2 incoming version-1 connections", func() error {
		if n := established(a.Mux, DirectionIn, 1); n != 2 {
			return fmt.Errorf("%d; stats %+v", n, a.Stats())
		}
		return nil
	})
	if s := a.Stats(); s.Refused[RefusedProtocol]+s.Refused[RefusedVersion] != 0 {
		t.Fatalf("refusals %v", s.Refused)
	}
}

// raftEnd is a raft NetworkTransport over a Mux's raft layer.
func raftEnd(t *testing.T, m *Mux) *raft.NetworkTransport {
	tr := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: m.RaftLayer(), MaxPool: 1, Timeout: 5 * time.Second,
		Logger: hclog.New(&hclog.LoggerOptions{Output: testWriter(t), Level: hclog.Error}),
	})
	t.Cleanup(func() { tr.Close() })
	return tr
}

// Nodes whose ranges do not overlap refuse each other, whichever dials:
// one warning on each side naming both ranges and the peer, the version
// refusal counted on both, and no raft RPC delivered.
func TestNonOverlappingVersionsRefused(t *testing.T) {
	cases := []struct {
		name        string
		dialer, acc func(*Config)
		dialerSays  string // in the dialer's log and error
		accSays     string // in the acceptor's log
	}{
		{"newer dialer", versions(3, 4), nil,
			"speaks raft-port protocol 1-2; this node speaks 3-4: run releases at most one apart, see docs/upgrades.md",
			"speaks raft-port protocol 3-4; this node speaks 1-2: run releases at most one apart, see docs/upgrades.md"},
		{"newer acceptor", nil, versions(3, 4),
			"speaks raft-port protocol 3-4; this node speaks 1-2",
			"speaks raft-port protocol 1-2; this node speaks 3-4"},
		{"v1 dialer to a 2-3 acceptor", legacy, versions(2, 3),
			"", // release v0.1.0 sees only a closed connection
			"speaks raft-port protocol 1; this node speaks 2-3"},
		{"2-3 dialer to a v1 acceptor", versions(2, 3), legacy,
			"closed the connection at this node's protocol-2 greeting, so it speaks only raft-port protocol 1 (or was over its handshake cap); this node speaks 2-3",
			""}, // release v0.1.0 logs a greeting it does not know
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := listenVer(t, tc.acc)
			d := listenVer(t, tc.dialer)
			at := raftEnd(t, a.Mux)
			var resp raft.AppendEntriesResponse
			err := raftEnd(t, d.Mux).AppendEntries("a", raft.ServerAddress(a.Addr().String()),
				&raft.AppendEntriesRequest{RPCHeader: evil, Term: 1}, &resp)
			if err == nil {
				t.Fatal("AppendEntries between non-overlapping versions succeeded")
			}
			if tc.dialerSays != "" {
				if !strings.Contains(err.Error(), tc.dialerSays) {
					t.Fatalf("dialer error %q; want it to say %q", err, tc.dialerSays)
				}
				line := "peer " + a.Addr().String() + " " + tc.dialerSays
				if !strings.Contains(d.log.String(), line) {
					t.Fatalf("dialer log lacks %q:\n%s", line, d.log.String())
				}
				if n := d.Stats().Refused[RefusedVersion]; n != 1 {
					t.Fatalf("dialer version refusals %d; want 1", n)
				}
			}
			if tc.accSays != "" {
				// The refusal is counted before it is logged: wait for both.
				said := regexp.MustCompile(`peer 127\.0\.0\.1:\d+ ` + regexp.QuoteMeta(tc.accSays))
				testkit.Eventually(t, 5*time.Second, "the acceptor counts and logs a version refusal", func() error {
					if n := a.Stats().Refused[RefusedVersion]; n != 1 {
						return fmt.Errorf("%d refusals", n)
					}
					if !said.MatchString(a.log.String()) {
						return fmt.Errorf("acceptor log lacks %q:\n%s", tc.accSays, a.log.String())
					}
					return nil
				})
			} else {
				testkit.Eventually(t, 5*time.Second, "the old acceptor counts a protocol refusal", func() error {
					if n := a.Stats().Refused[RefusedProtocol]; n == 0 {
						return errors.New("none")
					}
					return nil
				})
			}
			select {
			case rpc := <-at.Consumer():
				t.Fatalf("raft received %T across non-overlapping versions", rpc.Command)
			default:
			}
			if s := a.Stats(); len(s.Established) != 0 {
				t.Fatalf("acceptor established %v", s.Established)
			}
		})
	}
}

// Version refusals are sampled like the other refusals: one warning per
// period, with the number held back.
func TestVersionRefusalsSampled(t *testing.T) {
	a := listenVer(t, nil)
	d := listenVer(t, versions(5, 6))
	for range 5 {
		if _, err := d.RaftLayer().Dial(raft.ServerAddress(a.Addr().String()), 5*time.Second); err == nil {
			t.Fatal("Dial succeeded")
		}
	}
	testkit.Eventually(t, 5*time.Second, "5 version refusals on the acceptor", func() error {
		if n := a.Stats().Refused[RefusedVersion]; n != 5 {
			return fmt.Errorf("%d", n)
		}
		return nil
	})
	for _, n := range []verNode{a, d} {
		if c := strings.Count(n.log.String(), "run releases at most one apart"); c != 1 {
			t.Fatalf("%d version warnings; want 1 per %v:\n%s", c, refusalLogEvery, n.log.String())
		}
	}
}

// forgedAcceptor answers a version-2 greeting with head (chosen ‖ amin ‖
// amax) and a nonce, then reports whether the dialer sent a proof.
func forgedAcceptor(t *testing.T, head []byte) (string, <-chan int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan int, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.ReadFull(c, make([]byte, 1+helloV2Size))
		c.Write(append(head, make([]byte, nonceSize)...))
		rest, _ := io.ReadAll(c)
		got <- len(rest)
	}()
	return ln.Addr().String(), got
}

// A garbled or forged version exchange is refused cleanly on both sides:
// the acceptor closes a greeting with version 0, min > max or a short
// length; the dialer refuses an answer with an impossible range or a
// version that is not the highest common one, before sending its proof.
func TestGarbledVersionExchangeRefused(t *testing.T) {
	a := listenVer(t, nil)
	auth := newConnAuth(clusterSecret, ThisRelease, false)
	hello, _, _ := auth.helloV2(kindRaft, Identity{})
	for _, tc := range []struct {
		name   string
		send   []byte
		reason string
	}{
		{"version 0", patch(hello, 5, 0, 0, 0, 2), RefusedProtocol},
		{"min above max", patch(hello, 5, 0, 3, 0, 2), RefusedProtocol},
		{"short", hello[:20], RefusedIO},
	} {
		t.Run("acceptor/"+tc.name, func(t *testing.T) {
			before := a.Stats().Refused[tc.reason]
			conn, err := net.Dial("tcp", a.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.Write(tc.send)
			conn.(*net.TCPConn).CloseWrite()
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			if b, _ := io.ReadAll(conn); len(b) != 0 {
				t.Fatalf("the acceptor answered %x to a garbled greeting", b)
			}
			testkit.Eventually(t, 5*time.Second, tc.reason+" refusal counted", func() error {
				if n := a.Stats().Refused[tc.reason]; n != before+1 {
					return fmt.Errorf("%d", n)
				}
				return nil
			})
		})
	}
	for _, tc := range []struct {
		name string
		head []byte
		want string
	}{
		{"acceptor range with version 0", []byte{0, 2, 0, 0, 0, 2}, "garbled version range"},
		{"acceptor min above max", []byte{0, 2, 0, 3, 0, 2}, "garbled version range"},
		{"not the highest common", []byte{0, 1, 0, 1, 0, 2}, "the highest common one is 2"},
		{"a version outside both", []byte{0, 9, 0, 1, 0, 9}, "the highest common one is 2"},
		{"refusal despite overlap", []byte{0, 0, 0, 1, 0, 2}, "the highest common one is 2"},
	} {
		t.Run("dialer/"+tc.name, func(t *testing.T) {
			addr, got := forgedAcceptor(t, tc.head)
			d := listenVer(t, nil)
			_, err := d.RaftLayer().Dial(raft.ServerAddress(addr), 5*time.Second)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Dial: %v; want an error saying %q", err, tc.want)
			}
			if n := <-got; n != 0 {
				t.Fatalf("the dialer sent %d bytes (a proof) after a forged answer", n)
			}
			if d.Stats().DialAuthFailed != 1 {
				t.Fatalf("stats %+v", d.Stats())
			}
		})
	}
}

// patch returns a copy of b with the bytes at off replaced.
func patch(b []byte, off int, with ...byte) []byte {
	c := append([]byte(nil), b...)
	copy(c[off:], with)
	return c
}

// tamperProxy relays between a dialer and addr, passing the acceptor's
// bytes through rewrite first.
func tamperProxy(t *testing.T, addr string, rewrite func([]byte)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				defer u.Close()
				go func() { io.Copy(u, c); u.(*net.TCPConn).CloseWrite() }()
				head := make([]byte, answerV2Head)
				if _, err := io.ReadFull(u, head); err != nil {
					return
				}
				rewrite(head)
				c.Write(head)
				io.Copy(c, u)
			}()
		}
	}()
	return ln.Addr().String()
}

// Someone without the secret who rewrites the negotiation — here the
// acceptor's range and choice, to push two new nodes down to version 1 —
// makes the proofs disagree: the connection is refused, never used.
func TestNegotiationTamperingDetected(t *testing.T) {
	a := listenVer(t, nil)
	var tampered atomic.Int64
	proxy := tamperProxy(t, a.Addr().String(), func(h []byte) {
		tampered.Add(1)
		copy(h, []byte{0, 1, 0, 1, 0, 1}) // "I chose 1; I speak only 1"
	})
	d := listenVer(t, nil)
	_, err := d.RaftLayer().Dial(raft.ServerAddress(proxy), 5*time.Second)
	if err == nil {
		t.Fatal("a downgraded negotiation was accepted")
	}
	if tampered.Load() == 0 {
		t.Fatal("the proxy rewrote nothing")
	}
	testkit.Eventually(t, 5*time.Second, "the acceptor refuses the dialer's proof", func() error {
		if n := a.Stats().Refused[RefusedAuth]; n != 1 {
			return fmt.Errorf("auth refusals %d", n)
		}
		return nil
	})
	if s := a.Stats(); len(s.Established) != 0 {
		t.Fatalf("established %v", s.Established)
	}
}

func TestParseVersionRange(t *testing.T) {
	for in, want := range map[string]VersionRange{"1-2": {1, 2}, "3": {3, 3}, " 2 - 4 ": {2, 4}, "65535-65535": {65535, 65535}} {
		if got, err := ParseVersionRange(in); err != nil || got != want {
			t.Errorf("ParseVersionRange(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0-2", "2-1", "a-b", "1-", "-2", "1-65536", "1-2-3"} {
		if _, err := ParseVersionRange(in); err == nil {
			t.Errorf("ParseVersionRange(%q) accepted", in)
		}
	}
	if _, err := Listen(Config{BindAddr: "127.0.0.1:0", Versions: VersionRange{2, 1}}); err == nil || !strings.Contains(err.Error(), "Versions") {
		t.Fatalf("Listen with versions 2-1: %v", err)
	}
}

// The memory of version-1 peers is bounded and forgets after v1MemoryFor.
func TestV1MemoryBounded(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	p := newV1Peers(clock.Now)
	for i := range v1MemoryMax + 10 {
		p.remember(fmt.Sprintf("10.0.%d.%d:8300", i/256, i%256))
		clock.Add(time.Millisecond)
	}
	if n := p.size(); n != v1MemoryMax {
		t.Fatalf("remembered %d; want at most %d", n, v1MemoryMax)
	}
	if p.speaksV1Only("10.0.0.0:8300") {
		t.Fatal("the oldest entry was kept over the bound")
	}
	last := fmt.Sprintf("10.0.%d.%d:8300", (v1MemoryMax+9)/256, (v1MemoryMax+9)%256)
	if !p.speaksV1Only(last) {
		t.Fatal("the newest entry was forgotten")
	}
	clock.Add(v1MemoryFor)
	if p.speaksV1Only(last) {
		t.Fatal("an entry outlived v1MemoryFor")
	}
}

// scriptConn is a net.Conn that reads a fixed script and records writes;
// the other methods are never called by the handshake.
type scriptConn struct {
	net.Conn
	in  *strings.Reader
	out []byte
}

func (c *scriptConn) Read(p []byte) (int, error)  { return c.in.Read(p) }
func (c *scriptConn) Write(p []byte) (int, error) { c.out = append(c.out, p...); return len(p), nil }

// FuzzAcceptGreeting feeds arbitrary bytes after the kind byte to the
// acceptor: it never panics, never hands out a version without a valid
// proof, answers a version-2 greeting only with a well-formed version
// answer, and says nothing at all to anything else but a version-1
// greeting (a nonce).
func FuzzAcceptGreeting(f *testing.F) {
	a := newConnAuth(clusterSecret, ThisRelease, false)
	h2, _, _ := a.helloV2(kindRaft, Identity{})
	h1, _, _ := a.hello(kindRaft)
	f.Add(h2[1:])
	f.Add(h1[1:])
	f.Add(patch(h2, 5, 0, 0)[1:])
	f.Add(patch(h2, 5, 0, 3, 0, 4)[1:])
	f.Add(h2[1:9])
	f.Add([]byte("RAU3"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := &scriptConn{in: strings.NewReader(string(b))}
		v, _, err := a.accept(c, kindRaft, nil, Identity{})
		if err == nil || v != 0 {
			t.Fatalf("accepted %x as version %d, %v", b, v, err)
		}
		switch {
		case len(c.out) == 0:
		case strings.HasPrefix(string(b), "RAU1") && len(c.out) == nonceSize:
		case strings.HasPrefix(string(b), "RAU2") && len(b) >= helloV2Size:
			if len(c.out) != answerV2Head && len(c.out) != answerV2Head+nonceSize+identitySize {
				t.Fatalf("version-2 answer of %d bytes", len(c.out))
			}
		default:
			t.Fatalf("answered %x to %x", c.out, b)
		}
	})
}

// The fallback works inside mutual TLS too, where the old acceptor's close
// arrives through the TLS session.
func TestNewDialerFallsBackToV1OverTLS(t *testing.T) {
	p := newPKI(t)
	old := listenVer(t, func(c *Config) { legacy(c); c.TLS = p.nodeTLS("old") })
	b := listenVer(t, func(c *Config) { c.TLS = p.nodeTLS("b") })
	serveRPC(t, old.Mux, "old")
	roundTrip(t, old.Mux, b.Mux, "old")
	if n := established(b.Mux, DirectionOut, 1); n != 2 {
		t.Fatalf("b's outgoing version-1 connections: %d; want 2; stats %+v", n, b.Stats())
	}
}
