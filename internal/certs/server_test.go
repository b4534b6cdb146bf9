package certs_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/certs"
)

// A public port's certificate signed by an organisation's intermediate
// CA carries the intermediate after the leaf, so a client that trusts
// only the root verifies it; one signed by a root carries the leaf alone.
func TestIssueServerChain(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	rootKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rootTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "org root"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	rootDER, err := x509.CreateCertificate(rand.Reader, rootTmpl, rootTmpl, &rootKey.PublicKey, rootKey)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := x509.ParseCertificate(rootDER)
	interKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	interTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "org web CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true, KeyUsage: x509.KeyUsageCertSign,
	}
	interDER, err := x509.CreateCertificate(rand.Reader, interTmpl, root, &interKey.PublicKey, rootKey)
	if err != nil {
		t.Fatal(err)
	}
	interKeyDER, _ := x509.MarshalPKCS8PrivateKey(interKey)
	certPath, keyPath := filepath.Join(dir, "inter.pem"), filepath.Join(dir, "inter-key.pem")
	os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: interDER}), 0o644)
	os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: interKeyDER}), 0o600)

	inter, err := certs.LoadCAFiles(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	c, err := inter.IssueServer(certs.NodeRequest{Name: "web", Hosts: []string{"board.example"}, Lifetime: 12 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	files, err := c.Save(filepath.Join(dir, "web"), false)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(files.Cert, files.Key)
	if err != nil {
		t.Fatal(err)
	}
	if len(pair.Certificate) != 2 {
		t.Fatalf("%s holds %d certificates, want the leaf and the intermediate", files.Cert, len(pair.Certificate))
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	roots, inters := x509.NewCertPool(), x509.NewCertPool()
	roots.AddCert(root)
	second, _ := x509.ParseCertificate(pair.Certificate[1])
	inters.AddCert(second)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inters, DNSName: "board.example"}); err != nil {
		t.Fatalf("the chain written does not verify under the root: %v", err)
	}

	self, err := certs.NewCA("self-signed", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, err = self.IssueServer(certs.NodeRequest{Name: "web", Hosts: []string{"board.example"}, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Chain) != 0 {
		t.Errorf("a certificate signed by a root carries a chain of %d", len(c.Chain))
	}
}

// A wildcard names one leftmost label of a domain of at least two labels:
// the pods behind a headless Service share one certificate.
func TestWildcardHost(t *testing.T) {
	dns, _, err := certs.ParseHosts([]string{"*.restarea-peers.default.svc.cluster.local"})
	if err != nil || len(dns) != 1 {
		t.Fatalf("wildcard: %v %v", dns, err)
	}
	for _, bad := range []string{"*.example", "*", "a.*.example.org", "**.example.org", "x*.example.org"} {
		if _, _, err := certs.ParseHosts([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	ca, err := certs.NewCA("wildcard CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ca.IssueServer(certs.NodeRequest{Name: "web", Hosts: []string{"*.peers.example.org"}, Lifetime: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	if _, err := c.Cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "node-0.peers.example.org"}); err != nil {
		t.Errorf("the wildcard certificate does not verify for a pod's name: %v", err)
	}
}
