package transport

import (
	"crypto/tls"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/testkit"
)

// quietWriter forwards to the test's output until the test ends, so a
// late log line from a background goroutine cannot fail the run.
type quietWriter struct {
	mu  sync.Mutex
	w   io.Writer
	off bool
}

func (q *quietWriter) Write(p []byte) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.off {
		return len(p), nil
	}
	return q.w.Write(p)
}

func testWriter(t *testing.T) io.Writer {
	q := &quietWriter{w: t.Output()}
	t.Cleanup(func() {
		q.mu.Lock()
		q.off = true
		q.mu.Unlock()
	})
	return q
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter(t), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// listen opens a Mux on a free loopback port and closes it at cleanup.
func listen(t *testing.T, tlsCfg *tls.Config, handshake time.Duration) *Mux {
	t.Helper()
	m, err := Listen(Config{
		BindAddr:         "127.0.0.1:0",
		TLS:              tlsCfg,
		Logger:           testLogger(t),
		HandshakeTimeout: handshake,
	})
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// pki is testkit's throwaway CA, with the node configurations it loads.
type pki struct {
	*testkit.PKI
	t *testing.T
}

func newPKI(t *testing.T) pki { return pki{testkit.NewPKI(t), t} }

// nodeTLS issues a node certificate and loads it through LoadTLS.
func (p pki) nodeTLS(name string) *tls.Config {
	p.t.Helper()
	cert, key := p.Issue(name)
	cfg, err := LoadTLS(cert, key, p.CAFile)
	if err != nil {
		p.t.Fatalf("LoadTLS: %v", err)
	}
	return cfg
}
