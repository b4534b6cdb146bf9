package transport

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

// pki is a throwaway certificate authority writing PEM files to a temp dir.
type pki struct {
	t    *testing.T
	dir  string
	ca   *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // CA PEM path
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "restarea test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	p := &pki{t: t, dir: t.TempDir(), ca: ca, key: key}
	p.file = p.write("ca.pem", "CERTIFICATE", der)
	return p
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func (p *pki) write(name, typ string, der []byte) string {
	p.t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		p.t.Fatal(err)
	}
	return path
}

var serial atomic.Int64

// issue writes a node certificate for 127.0.0.1, valid for server and client
// auth, and returns the certificate and key paths.
func (p *pki) issue(name string, usages ...x509.ExtKeyUsage) (certFile, keyFile string) {
	p.t.Helper()
	if len(usages) == 0 {
		usages = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	key := newKey(p.t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(100 + serial.Add(1)),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usages,
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.key)
	if err != nil {
		p.t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		p.t.Fatal(err)
	}
	return p.write(name+".pem", "CERTIFICATE", der), p.write(name+"-key.pem", "PRIVATE KEY", keyDER)
}

// nodeTLS issues a node certificate and loads it through LoadTLS.
func (p *pki) nodeTLS(name string) *tls.Config {
	p.t.Helper()
	cert, key := p.issue(name)
	cfg, err := LoadTLS(cert, key, p.file)
	if err != nil {
		p.t.Fatalf("LoadTLS: %v", err)
	}
	return cfg
}

// pool returns the CA as a certificate pool, for hand-made clients.
func (p *pki) pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.ca)
	return pool
}
