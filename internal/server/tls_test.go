package server

import (
	"crypto/x509"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/certs"
)

func issueHTTP(t *testing.T, ca *certs.CA, dir string, force bool) *x509.Certificate {
	t.Helper()
	c, err := ca.IssueServer(certs.NodeRequest{Name: "web", Hosts: []string{"127.0.0.1"}, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Save(dir, force); err != nil {
		t.Fatal(err)
	}
	return c.Cert
}

// The public port serves a renewed pair from the first handshake after
// the check interval, keeps the old one while the new files do not load,
// and refuses at start what it could not serve.
func TestHTTPSCertificateReload(t *testing.T) {
	dir := t.TempDir()
	ca, err := certs.NewCA("reload CA", 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	first := issueHTTP(t, ca, dir, false)
	certFile, keyFile := filepath.Join(dir, "web.pem"), filepath.Join(dir, "web-key.pem")
	cfg, err := loadHTTPS(certFile, keyFile, slog.New(slog.DiscardHandler), 0)
	if err != nil {
		t.Fatal(err)
	}
	serial := func() string {
		t.Helper()
		c, err := cfg.GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf.SerialNumber.String()
	}
	if got := serial(); got != first.SerialNumber.String() {
		t.Fatalf("serving serial %s, want the first certificate's", got)
	}
	second := issueHTTP(t, ca, dir, true)
	if got := serial(); got != second.SerialNumber.String() {
		t.Fatalf("after renewal serving serial %s, want the second certificate's %s", got, second.SerialNumber)
	}
	// A renewal half written: the certificate of a third pair beside the
	// second's key. The second pair stays in service.
	third, err := ca.IssueServer(certs.NodeRequest{Name: "web3", Hosts: []string{"127.0.0.1"}, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	files, err := third.Save(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(files.Cert)
	if err := os.WriteFile(certFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := serial(); got != second.SerialNumber.String() {
		t.Fatalf("with a mismatched pair on disk serving serial %s, want the second certificate's still", got)
	}

	// At start, a mismatched pair or a client-only certificate stops the node.
	if _, err := LoadHTTPS(certFile, keyFile, nil); err == nil {
		t.Error("LoadHTTPS accepted a certificate with another certificate's key")
	}
	node, err := ca.Issue(certs.NodeRequest{Name: "node1", Hosts: []string{"127.0.0.1"}, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	nf, err := node.Save(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadHTTPS(nf.Cert, nf.Key, nil); err != nil {
		t.Errorf("a node certificate (server and client auth) should also serve the public port: %v", err)
	}
	if _, err := LoadHTTPS(nf.Cert, "", nil); err == nil || !strings.Contains(err.Error(), "both") {
		t.Errorf("a certificate without a key: %v", err)
	}
}
