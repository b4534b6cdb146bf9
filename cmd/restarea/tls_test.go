package main

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/restarea/restarea/internal/certs"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/transport"
)

// `restarea tls ca` and `restarea tls node` as an operator runs them: the
// files serve's --tls-* flags take, keys 0600, LoadTLS accepts them, the
// lifetimes are printed, and nothing is overwritten without --force.
func TestTLSCommand(t *testing.T) {
	root := t.TempDir()
	caDir, nodeDir := filepath.Join(root, "ca"), filepath.Join(root, "node1")
	code, out, errOut := run(t, "tls", "ca", "--out", caDir)
	if code != 0 {
		t.Fatalf("tls ca exited %d: %s", code, errOut)
	}
	if !strings.Contains(out, "(3650 days)") || !strings.Contains(out, "SHA-256 fingerprint") {
		t.Fatalf("tls ca output does not state the lifetime and fingerprint:\n%s", out)
	}
	code, out, errOut = run(t, "tls", "node", "--ca-dir", caDir, "--out", nodeDir, "--name", "node1",
		"--host", "node1.example", "--host", "10.0.0.1,127.0.0.1")
	if code != 0 {
		t.Fatalf("tls node exited %d: %s", code, errOut)
	}
	if !strings.Contains(out, "(730 days)") || !strings.Contains(out, "DNS:node1.example, IP:10.0.0.1, IP:127.0.0.1") {
		t.Fatalf("tls node output does not state the lifetime and hosts:\n%s", out)
	}
	cert, key, ca := filepath.Join(nodeDir, "node1.pem"), filepath.Join(nodeDir, "node1-key.pem"), filepath.Join(nodeDir, "ca.pem")
	for path, want := range map[string]os.FileMode{
		filepath.Join(caDir, "ca.pem"): 0o644, filepath.Join(caDir, "ca-key.pem"): 0o600,
		cert: 0o644, key: 0o600, ca: 0o644,
	} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %o, want %o", path, st.Mode().Perm(), want)
		}
	}
	if _, err := transport.LoadTLS(cert, key, ca); err != nil {
		t.Fatalf("LoadTLS refuses what tls node wrote: %v", err)
	}

	before, _ := os.ReadFile(key)
	for _, args := range [][]string{
		{"tls", "ca", "--out", caDir},
		{"tls", "node", "--ca-dir", caDir, "--out", nodeDir, "--name", "node1", "--host", "node1.example"},
	} {
		code, _, errOut := run(t, args...)
		if code != 1 || !strings.Contains(errOut, "refusing to overwrite") || !strings.Contains(errOut, "--force") {
			t.Fatalf("%v over existing files: exit %d: %s", args, code, errOut)
		}
	}
	if after, _ := os.ReadFile(key); string(after) != string(before) {
		t.Fatal("a refused tls node changed the key")
	}
	code, out, errOut = run(t, "tls", "node", "--ca-dir", caDir, "--out", nodeDir, "--name", "node1", "--host", "node1.example", "--lifetime", "90d", "--force")
	if code != 0 || !strings.Contains(out, "(90 days)") {
		t.Fatalf("tls node --force exited %d: %s %s", code, out, errOut)
	}
	if after, _ := os.ReadFile(key); string(after) == string(before) {
		t.Fatal("--force did not replace the key")
	}
	if _, err := transport.LoadTLS(cert, key, ca); err != nil {
		t.Fatalf("LoadTLS after --force: %v", err)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tls"}, "usage"},
		{[]string{"tls", "bogus"}, "unknown command"},
		{[]string{"tls", "node", "--ca-dir", caDir, "--host", "h"}, "--name is required"},
		{[]string{"tls", "node", "--ca-dir", caDir, "--name", "n"}, "at least one --host"},
		{[]string{"tls", "node", "--ca-dir", caDir, "--name", "n", "--host", "h:8300"}, "without a port"},
		{[]string{"tls", "node", "--ca-dir", caDir, "--name", "n", "--host", "h", "--lifetime", "soon"}, "--lifetime"},
		{[]string{"tls", "node", "--ca-dir", caDir, "--name", "n", "--host", "h", "--lifetime", "99999d"}, "outlive"},
		{[]string{"tls", "ca", "--lifetime", "0d", "--out", filepath.Join(root, "x")}, "positive"},
	} {
		code, _, errOut := run(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 mentioning %q", tc.args, code, errOut, tc.want)
		}
	}
	code, _, errOut = run(t, "tls", "node", "--ca-dir", filepath.Join(root, "missing"), "--name", "n", "--host", "h", "--out", filepath.Join(root, "n"))
	if code != 1 || !strings.Contains(errOut, "read CA certificate") {
		t.Errorf("missing CA dir: exit %d: %s", code, errOut)
	}
}

// `restarea tls http` issues the public port's certificate from the
// nodes' CA or from another CA given by file: server auth only, the
// hosts given, files that serve's --http-tls-cert and --http-tls-key
// load, and the CA copy clients take as --ca.
func TestTLSHTTPCommand(t *testing.T) {
	root := t.TempDir()
	caDir, otherDir, webDir := filepath.Join(root, "ca"), filepath.Join(root, "other"), filepath.Join(root, "web")
	for _, dir := range []string{caDir, otherDir} {
		if code, _, errOut := run(t, "tls", "ca", "--out", dir); code != 0 {
			t.Fatalf("tls ca exited %d: %s", code, errOut)
		}
	}
	code, out, errOut := run(t, "tls", "http", "--ca-dir", caDir, "--out", webDir, "--name", "web", "--host", "board.example,127.0.0.1")
	if code != 0 {
		t.Fatalf("tls http exited %d: %s", code, errOut)
	}
	for _, want := range []string{"server auth", "DNS:board.example, IP:127.0.0.1", "--http-tls-cert " + filepath.Join(webDir, "web.pem"), "--http-tls-key  " + filepath.Join(webDir, "web-key.pem"), "clients' --ca"} {
		if !strings.Contains(out, want) {
			t.Errorf("tls http output lacks %q:\n%s", want, out)
		}
	}
	checkServerCert(t, filepath.Join(webDir, "web.pem"), filepath.Join(webDir, "web-key.pem"), filepath.Join(webDir, "ca.pem"), "board.example")

	// Another CA, given by its files, into another directory.
	otherWeb := filepath.Join(root, "web-other")
	code, out, errOut = run(t, "tls", "http", "--ca-cert", filepath.Join(otherDir, "ca.pem"), "--ca-key", filepath.Join(otherDir, "ca-key.pem"),
		"--out", otherWeb, "--name", "web", "--host", "board.example")
	if code != 0 {
		t.Fatalf("tls http --ca-cert exited %d: %s", code, errOut)
	}
	checkServerCert(t, filepath.Join(otherWeb, "web.pem"), filepath.Join(otherWeb, "web-key.pem"), filepath.Join(otherDir, "ca.pem"), "board.example")

	if code, _, errOut := run(t, "tls", "http", "--ca-dir", caDir, "--out", webDir, "--name", "web", "--host", "board.example"); code != 1 || !strings.Contains(errOut, "--force") {
		t.Errorf("tls http over existing files: exit %d: %s", code, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tls", "http", "--ca-dir", caDir, "--host", "h"}, "--name is required"},
		{[]string{"tls", "http", "--ca-dir", caDir, "--name", "w"}, "at least one --host"},
		{[]string{"tls", "http", "--ca-cert", filepath.Join(otherDir, "ca.pem"), "--name", "w", "--host", "h"}, "together"},
		{[]string{"tls", "http", "--ca-dir", caDir, "--ca-cert", "a", "--ca-key", "b", "--name", "w", "--host", "h"}, "not both"},
	} {
		code, _, errOut := run(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 mentioning %q", tc.args, code, errOut, tc.want)
		}
	}
}

// checkServerCert checks that certFile and keyFile load as serve loads
// them and that the certificate verifies under caFile for host, as a
// server certificate only.
func checkServerCert(t *testing.T, certFile, keyFile, caFile, host string) {
	t.Helper()
	if _, err := server.LoadHTTPS(certFile, keyFile, nil); err != nil {
		t.Fatalf("serve would not load %s: %v", certFile, err)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool, err := certs.LoadPool(caFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: host}); err != nil {
		t.Errorf("%s does not verify under %s for %s: %v", certFile, caFile, host, err)
	}
	if !slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("%s: extended key usage %v, want server auth only", certFile, leaf.ExtKeyUsage)
	}
}
