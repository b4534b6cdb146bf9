package testnode

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/certs"
	"github.com/restarea/restarea/internal/server"
)

// HTTPS is a public-port certificate for 127.0.0.1 and localhost, issued
// by `restarea tls`'s own code from a fresh CA, in files under a
// temporary directory: what `serve --http-tls-cert --http-tls-key` and a
// client's --ca take.
type HTTPS struct {
	CertFile, KeyFile, CAFile string
	// Roots holds the CA alone (not the system's roots).
	Roots *x509.CertPool
}

// NewHTTPS issues the CA and the certificate.
func NewHTTPS(t testing.TB) HTTPS {
	t.Helper()
	dir := t.TempDir()
	ca, err := certs.NewCA("restarea test CA", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ca.IssueServer(certs.NodeRequest{Name: "http", Hosts: []string{"127.0.0.1", "localhost"}, Lifetime: 12 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	files, err := c.Save(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	return HTTPS{CertFile: files.Cert, KeyFile: files.Key, CAFile: files.CA, Roots: roots}
}

// Option makes a node serve HTTPS with the certificate, loaded the way
// serve loads it, and trust the CA for other nodes' public ports (joins).
func (h HTTPS) Option(t testing.TB) Option {
	t.Helper()
	cfg, err := server.LoadHTTPS(h.CertFile, h.KeyFile, Logger())
	if err != nil {
		t.Fatalf("load the public port's certificate: %v", err)
	}
	return func(c *server.Config) {
		c.HTTPTLS = cfg
		c.PublicClientTLS = &tls.Config{RootCAs: h.Roots, MinVersion: tls.VersionTLS12}
	}
}

// Client returns an HTTP client that trusts the CA (and nothing else),
// with testkit's request timeout.
func (h HTTPS) Client() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: h.Roots, MinVersion: tls.VersionTLS12}
	tr.ForceAttemptHTTP2 = true
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}
