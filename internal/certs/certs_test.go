package certs_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/certs"
	"github.com/restarea/restarea/transport"
)

func newCA(t *testing.T, dir string) *certs.CA {
	t.Helper()
	ca, err := certs.NewCA("test CA", certs.DefaultCALifetime)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ca.Save(dir, false); err != nil {
		t.Fatal(err)
	}
	return ca
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

// A CA and a node certificate written to disk are what LoadTLS wants:
// P-256 keys, both usages, the hosts as SANs, the stated lifetimes, keys
// readable only by their owner.
func TestIssuedFilesLoad(t *testing.T) {
	caDir, nodeDir := t.TempDir(), filepath.Join(t.TempDir(), "node1")
	newCA(t, caDir)
	ca, err := certs.LoadCA(caDir)
	if err != nil {
		t.Fatal(err)
	}
	n, err := ca.Issue(certs.NodeRequest{Name: "node1", Hosts: []string{"Node1.Example.", "10.0.0.1,::1", "node1.example"}, Lifetime: 48 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	files, err := n.Save(nodeDir, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := (certs.NodeFiles{Cert: filepath.Join(nodeDir, "node1.pem"), Key: filepath.Join(nodeDir, "node1-key.pem"), CA: filepath.Join(nodeDir, "ca.pem")}); files != want {
		t.Fatalf("files %+v, want %+v", files, want)
	}
	if _, err := transport.LoadTLS(files.Cert, files.Key, files.CA); err != nil {
		t.Fatalf("LoadTLS refuses the output: %v", err)
	}
	for path, want := range map[string]os.FileMode{
		files.Cert: 0o644, files.Key: 0o600, files.CA: 0o644,
		filepath.Join(caDir, certs.CACertFile): 0o644, filepath.Join(caDir, certs.CAKeyFile): 0o600, nodeDir: 0o700,
	} {
		if got := mode(t, path); got != want {
			t.Errorf("%s: mode %o, want %o", path, got, want)
		}
	}

	c := n.Cert
	if !slices.Equal(c.DNSNames, []string{"node1.example"}) || len(c.IPAddresses) != 2 ||
		!c.IPAddresses[0].Equal(net.ParseIP("10.0.0.1")) || !c.IPAddresses[1].Equal(net.IPv6loopback) {
		t.Fatalf("SANs: %v %v", c.DNSNames, c.IPAddresses)
	}
	if pk, ok := c.PublicKey.(*ecdsa.PublicKey); !ok || pk.Curve != elliptic.P256() {
		t.Fatalf("node key is %T, want ECDSA P-256", c.PublicKey)
	}
	if pk, ok := ca.Cert.PublicKey.(*ecdsa.PublicKey); !ok || pk.Curve != elliptic.P256() {
		t.Fatalf("CA key is %T, want ECDSA P-256", ca.Cert.PublicKey)
	}
	if got := c.NotAfter.Sub(c.NotBefore); got != 48*time.Hour+certs.Backdate {
		t.Fatalf("node validity %v, want 48h plus the %v backdate", got, certs.Backdate)
	}
	if got := ca.Cert.NotAfter.Sub(ca.Cert.NotBefore); got != certs.DefaultCALifetime+certs.Backdate {
		t.Fatalf("CA validity %v", got)
	}
	if c.IsCA || !ca.Cert.IsCA || !ca.Cert.MaxPathLenZero || c.Subject.CommonName != "node1" {
		t.Fatalf("constraints: node IsCA %v, CA IsCA %v pathlen0 %v, CN %q", c.IsCA, ca.Cert.IsCA, ca.Cert.MaxPathLenZero, c.Subject.CommonName)
	}
	if !slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageServerAuth) || !slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		t.Fatalf("ext key usage %v", c.ExtKeyUsage)
	}
	if fp := certs.Fingerprint(c); len(fp) != 95 || strings.Count(fp, ":") != 31 {
		t.Fatalf("fingerprint %q", fp)
	}
}

// Existing files are never overwritten without force, and a refusal
// writes nothing; force replaces them with the right modes.
func TestRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, dir)
	before, _ := os.ReadFile(filepath.Join(dir, certs.CAKeyFile))

	other, _ := certs.NewCA("other", time.Hour*24)
	_, _, err := other.Save(dir, false)
	var exists *certs.ExistsError
	if !errors.As(err, &exists) || !errors.Is(err, fs.ErrExist) || len(exists.Paths) != 2 {
		t.Fatalf("second CA into the same dir: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, certs.CAKeyFile)); string(after) != string(before) {
		t.Fatal("a refused save changed the CA key")
	}

	// A node saved into the CA's own directory: ca.pem is identical and
	// left alone.
	n1, err := ca.Issue(certs.NodeRequest{Name: "node1", Hosts: []string{"127.0.0.1"}, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n1.Save(dir, false); err != nil {
		t.Fatalf("node into the CA dir: %v", err)
	}
	// The same name again is refused (only the two node files clash)...
	again, _ := ca.Issue(certs.NodeRequest{Name: "node1", Hosts: []string{"127.0.0.1"}, Lifetime: time.Hour})
	if _, err := again.Save(dir, false); !errors.As(err, &exists) || len(exists.Paths) != 2 {
		t.Fatalf("same node twice: %v", err)
	}
	// ...unless forced; a key whose mode was widened comes back 0600.
	keyPath := filepath.Join(dir, "node1-key.pem")
	os.Chmod(keyPath, 0o644)
	files, err := again.Save(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := mode(t, keyPath); got != 0o600 {
		t.Fatalf("forced key mode %o", got)
	}
	if _, err := transport.LoadTLS(files.Cert, files.Key, files.CA); err != nil {
		t.Fatal(err)
	}
	// A node of another CA cannot drop its ca.pem over this one.
	n3, _ := other.Issue(certs.NodeRequest{Name: "node3", Hosts: []string{"127.0.0.1"}, Lifetime: time.Hour})
	if _, err := n3.Save(dir, false); !errors.As(err, &exists) || len(exists.Paths) != 1 || filepath.Base(exists.Paths[0]) != "ca.pem" {
		t.Fatalf("foreign ca.pem: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node3.pem")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused save left node3.pem behind: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*tmp*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// A certificate from another CA does not pass LoadTLS with this CA.
func TestOtherCARefused(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	newCA(t, dirA)
	caB := newCA(t, dirB)
	n, _ := caB.Issue(certs.NodeRequest{Name: "n", Hosts: []string{"127.0.0.1"}, Lifetime: time.Hour})
	files, err := n.Save(dirB, false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = transport.LoadTLS(files.Cert, files.Key, filepath.Join(dirA, certs.CACertFile))
	if err == nil || !strings.Contains(err.Error(), "not valid under CA") {
		t.Fatalf("LoadTLS with another CA: %v", err)
	}
}

func TestBadRequests(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, dir)
	for _, tc := range []struct {
		name string
		r    certs.NodeRequest
		want string
	}{
		{"no hosts", certs.NodeRequest{Name: "a", Lifetime: time.Hour}, "at least one host"},
		{"blank hosts", certs.NodeRequest{Name: "a", Hosts: []string{" , "}, Lifetime: time.Hour}, "at least one host"},
		{"port", certs.NodeRequest{Name: "a", Hosts: []string{"node1:8300"}, Lifetime: time.Hour}, "without a port"},
		{"underscore", certs.NodeRequest{Name: "a", Hosts: []string{"no_de"}, Lifetime: time.Hour}, "not allowed"},
		{"dash label", certs.NodeRequest{Name: "a", Hosts: []string{"-x.example"}, Lifetime: time.Hour}, "begin or end"},
		{"empty label", certs.NodeRequest{Name: "a", Hosts: []string{"a..b"}, Lifetime: time.Hour}, "1-63"},
		{"bad name", certs.NodeRequest{Name: "../x", Hosts: []string{"h"}, Lifetime: time.Hour}, "node name"},
		{"empty name", certs.NodeRequest{Hosts: []string{"h"}, Lifetime: time.Hour}, "node name"},
		{"ca name", certs.NodeRequest{Name: "CA", Hosts: []string{"h"}, Lifetime: time.Hour}, "collide"},
		{"zero lifetime", certs.NodeRequest{Name: "a", Hosts: []string{"h"}}, "positive"},
		{"outlives CA", certs.NodeRequest{Name: "a", Hosts: []string{"h"}, Lifetime: 2 * certs.DefaultCALifetime}, "outlive"},
	} {
		if _, err := ca.Issue(tc.r); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	if _, err := certs.NewCA("x", 0); err == nil {
		t.Error("a CA with no lifetime was made")
	}
	if _, err := certs.NewCA(" ", time.Hour); err == nil {
		t.Error("a CA with no name was made")
	}
}

func TestLoadCAChecks(t *testing.T) {
	if _, err := certs.LoadCA(t.TempDir()); err == nil || !strings.Contains(err.Error(), "read CA certificate") {
		t.Fatalf("empty dir: %v", err)
	}
	// The key of one CA beside the certificate of another.
	dirA, dirB := t.TempDir(), t.TempDir()
	newCA(t, dirA)
	newCA(t, dirB)
	keyB, _ := os.ReadFile(filepath.Join(dirB, certs.CAKeyFile))
	os.WriteFile(filepath.Join(dirA, certs.CAKeyFile), keyB, 0o600)
	if _, err := certs.LoadCA(dirA); err == nil || !strings.Contains(err.Error(), "does not belong") {
		t.Fatalf("mismatched key: %v", err)
	}
	// A node certificate is not a CA.
	ca, _ := certs.LoadCA(dirB)
	n, _ := ca.Issue(certs.NodeRequest{Name: "n", Hosts: []string{"h"}, Lifetime: time.Hour})
	nodeDir := t.TempDir()
	files, _ := n.Save(nodeDir, false)
	os.Rename(files.Cert, filepath.Join(nodeDir, certs.CACertFile))
	os.Rename(files.Key, filepath.Join(nodeDir, certs.CAKeyFile))
	if _, err := certs.LoadCA(nodeDir); err == nil || !strings.Contains(err.Error(), "not a CA") {
		t.Fatalf("node certificate as CA: %v", err)
	}
	os.WriteFile(filepath.Join(nodeDir, certs.CAKeyFile), []byte("junk"), 0o600)
	if _, err := certs.LoadCA(nodeDir); err == nil || !strings.Contains(err.Error(), "no PEM block") {
		t.Fatalf("junk key: %v", err)
	}
}

// During a CA rollover ca.pem holds both CAs: serve accepts a node
// certificate from either, so nodes can move to the new CA one at a time.
func TestCABundle(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	newCA(t, dirA)
	caB := newCA(t, dirB)
	a, _ := os.ReadFile(filepath.Join(dirA, certs.CACertFile))
	b, _ := os.ReadFile(filepath.Join(dirB, certs.CACertFile))
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(bundle, append(a, b...), 0o644)
	n, _ := caB.Issue(certs.NodeRequest{Name: "n", Hosts: []string{"127.0.0.1"}, Lifetime: time.Hour})
	files, err := n.Save(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := transport.LoadTLS(files.Cert, files.Key, bundle); err != nil {
		t.Fatalf("LoadTLS with a two-CA bundle: %v", err)
	}
}
