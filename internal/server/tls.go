package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	stdlog "log"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/restarea/restarea/internal/httpx"
)

// CertCheckInterval is how often, at most, the public port looks at its
// certificate and key files again (on a handshake): a renewed pair is
// served from the first handshake after it is written, within this long,
// without a restart.
const CertCheckInterval = 10 * time.Second

// LoadHTTPS reads the certificate (with its chain, leaf first) and key of
// the public port from PEM files and returns the TLS configuration that
// serves them: TLS 1.2 and later, HTTP/2 and HTTP/1.1. The pair is
// checked now, so a wrong file stops the node at start. Afterwards the
// files are looked at again at most every CertCheckInterval; a pair that
// changed and loads replaces the old one, a pair that does not load (a
// renewal half written, a key that does not match) is logged and the old
// one kept.
func LoadHTTPS(certFile, keyFile string, log *slog.Logger) (*tls.Config, error) {
	return loadHTTPS(certFile, keyFile, log, CertCheckInterval)
}

func loadHTTPS(certFile, keyFile string, log *slog.Logger, every time.Duration) (*tls.Config, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("the public port's TLS needs both a certificate and a key file")
	}
	if log == nil {
		log = slog.Default()
	}
	r := &certReloader{certFile: certFile, keyFile: keyFile, every: every, log: log}
	if err := r.load(); err != nil {
		return nil, err
	}
	r.checked = time.Now()
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		NextProtos:     []string{"h2", "http/1.1"},
		GetCertificate: r.get,
	}, nil
}

// certReloader serves a certificate pair and reloads it when its files
// change.
type certReloader struct {
	certFile, keyFile string
	every             time.Duration
	log               *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	certPEM []byte
	keyPEM  []byte
	checked time.Time
}

func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) >= r.every {
		r.checked = time.Now()
		if err := r.loadLocked(); err != nil {
			r.log.Error("public port: the renewed certificate does not load; the previous one is still served", "err", err)
		}
	}
	return r.cert, nil
}

func (r *certReloader) load() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.loadLocked()
}

// loadLocked reads both files and, when either changed, parses and
// installs the pair. Comparing contents (a few KB) rather than
// modification times also catches a file replaced within the same second.
func (r *certReloader) loadLocked() error {
	certPEM, err := os.ReadFile(r.certFile)
	if err != nil {
		return fmt.Errorf("read the public port's certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(r.keyFile)
	if err != nil {
		return fmt.Errorf("read the public port's key: %w", err)
	}
	if r.cert != nil && bytes.Equal(certPEM, r.certPEM) && bytes.Equal(keyPEM, r.keyPEM) {
		return nil
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("the public port's certificate %s with key %s: %w", r.certFile, r.keyFile, err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return fmt.Errorf("the public port's certificate %s: %w", r.certFile, err)
	}
	if now := time.Now(); now.After(leaf.NotAfter) {
		return fmt.Errorf("the public port's certificate %s expired on %s", r.certFile, leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if len(leaf.ExtKeyUsage) > 0 && !hasServerAuth(leaf) {
		return fmt.Errorf("the public port's certificate %s is not for server authentication (its extended key usage lacks serverAuth)", r.certFile)
	}
	pair.Leaf = leaf
	if r.cert != nil {
		r.log.Info("public port: serving a renewed certificate", "file", r.certFile, "not_after", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	r.cert, r.certPEM, r.keyPEM = &pair, certPEM, keyPEM
	return nil
}

func hasServerAuth(c *x509.Certificate) bool {
	for _, u := range c.ExtKeyUsage {
		if u == x509.ExtKeyUsageServerAuth || u == x509.ExtKeyUsageAny {
			return true
		}
	}
	return false
}

// serverErrorLog is the public port's http.Server.ErrorLog: what net/http
// reports about connections (failed TLS handshakes from scanners, bad
// HTTP/2 prefaces) is the client's doing and goes through the sampled
// refusal logger, so that a flood of them does not flood the log; a
// handler's panic is written whole, at Error.
func serverErrorLog(log *slog.Logger) *stdlog.Logger {
	return stdlog.New(errorLogWriter{log: log, refusals: httpx.NewLogSampler(log, 0)}, "", 0)
}

type errorLogWriter struct {
	log      *slog.Logger
	refusals *httpx.LogSampler
}

func (w errorLogWriter) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\n")
	if strings.HasPrefix(line, "http: panic serving") {
		w.log.Error("public port: a handler panicked", "err", line)
	} else {
		w.refusals.Log(context.Background(), slog.LevelInfo, "public port: connection refused by net/http", "err", line)
	}
	return len(p), nil
}
