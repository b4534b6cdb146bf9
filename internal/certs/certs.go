// Package certs creates the files TLS needs: a cluster CA, per-node
// certificates signed by it that transport.LoadTLS accepts for mutual TLS
// between nodes (ECDSA P-256, usable for both server and client
// authentication, naming the node's hosts), and server certificates for
// the public HTTPS port, signed by that CA or another. `restarea tls` is
// its command line.
package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// File names inside a CA directory; a node directory holds a copy of
// CACertFile beside NAME.pem and NAME-key.pem.
const (
	CACertFile = "ca.pem"
	CAKeyFile  = "ca-key.pem"
)

// Default lifetimes: a CA outlives many node certificates, and a node
// certificate lasts long enough that renewal is a planned, rare event.
const (
	DefaultCALifetime   = 3650 * 24 * time.Hour // 10 years
	DefaultNodeLifetime = 730 * 24 * time.Hour  // 2 years
)

// Backdate is how far before its creation a certificate becomes valid, so
// that a machine whose clock is a little behind the one that made it
// accepts it at once.
const Backdate = time.Hour

// CA is a certificate authority that signs node certificates.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// NewCA creates a self-signed CA with a fresh ECDSA P-256 key. It may sign
// only end-entity certificates (path length 0).
func NewCA(name string, lifetime time.Duration) (*CA, error) {
	if strings.TrimSpace(name) == "" {
		return nil, errors.New("certs: the CA needs a name")
	}
	if lifetime <= 0 {
		return nil, fmt.Errorf("certs: CA lifetime %v: want a positive duration", lifetime)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"rest.area"}},
		NotBefore:             now.Add(-Backdate),
		NotAfter:              now.Add(lifetime),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("certs: create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: parse CA certificate: %w", err)
	}
	return &CA{Cert: cert, Key: key}, nil
}

// LoadCA reads a CA written by CA.Save (or any CA certificate and its
// PKCS#8, SEC 1 or PKCS#1 key in PEM) from dir. It checks that the key
// belongs to the certificate, that the certificate is a CA, and that it
// has not expired.
func LoadCA(dir string) (*CA, error) {
	return LoadCAFiles(filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile))
}

// LoadCAFiles is LoadCA for a CA certificate and key at any paths: an
// organisation's own CA, or an intermediate of it, may sign the public
// port's certificate (CA.IssueServer).
func LoadCAFiles(certPath, keyPath string) (*CA, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("certs: read CA certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("certs: read CA key: %w", err)
	}
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("certs: %s: %w", certPath, err)
	}
	key, err := parseKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certs: %s: %w", keyPath, err)
	}
	if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fmt.Errorf("certs: %s is not a CA certificate (no CA basic constraint or cert-sign usage)", certPath)
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, fmt.Errorf("certs: %s does not belong to the certificate in %s", keyPath, certPath)
	}
	if now := time.Now(); now.After(cert.NotAfter) {
		return nil, fmt.Errorf("certs: the CA in %s expired on %s", certPath, cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return &CA{Cert: cert, Key: key}, nil
}

// Save writes the CA certificate (mode 0644) and its private key (0600) to
// dir, creating dir (0700) if needed. Without force it refuses, with an
// *ExistsError and before writing anything, when either file exists with
// other content.
func (ca *CA) Save(dir string, force bool) (certPath, keyPath string, err error) {
	keyPEM, err := encodeKey(ca.Key)
	if err != nil {
		return "", "", err
	}
	err = writeFiles(dir, force, []file{
		{name: CACertFile, data: encodeCert(ca.Cert), mode: 0o644},
		{name: CAKeyFile, data: keyPEM, mode: 0o600},
	})
	return filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile), err
}

// NodeRequest describes a node certificate to issue.
type NodeRequest struct {
	// Name is the node's name: the certificate's common name and the base
	// of its file names (NAME.pem, NAME-key.pem).
	Name string
	// Hosts are the DNS names and IP addresses peers dial this node by
	// (its raft advertise host must be one of them).
	Hosts []string
	// Lifetime is how long the certificate is valid; it must not outlive
	// the CA.
	Lifetime time.Duration
}

// Node is a node certificate (or a public port's) with its key and the
// CA that signed it.
type Node struct {
	Name string
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	CA   *x509.Certificate
	// Chain are the certificates written after Cert in NAME.pem: the
	// signing CA when it is an intermediate (IssueServer).
	Chain []*x509.Certificate
}

// NodeFiles are the paths Node.Save wrote: the values of serve's
// --tls-cert, --tls-key and --tls-ca.
type NodeFiles struct {
	Cert, Key, CA string
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Issue signs a certificate for one node with a fresh ECDSA P-256 key,
// valid for server and client authentication (every node is both) and
// naming exactly the hosts of r.
func (ca *CA) Issue(r NodeRequest) (*Node, error) {
	return ca.issue(r, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth})
}

// IssueServer signs a certificate for the public HTTP port (serve's
// --http-tls-cert) with a fresh ECDSA P-256 key: valid for server
// authentication only, naming exactly the hosts of r (the names and
// addresses clients and other nodes reach the port by). Its files are
// written by Node.Save like a node's; when the CA is an intermediate (not
// self-signed), the certificate file also carries the CA's certificate,
// so clients that trust only the root still verify the chain.
func (ca *CA) IssueServer(r NodeRequest) (*Node, error) {
	n, err := ca.issue(r, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth})
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(ca.Cert.RawIssuer, ca.Cert.RawSubject) {
		n.Chain = []*x509.Certificate{ca.Cert}
	}
	return n, nil
}

func (ca *CA) issue(r NodeRequest, usages []x509.ExtKeyUsage) (*Node, error) {
	if !nameRE.MatchString(r.Name) {
		return nil, fmt.Errorf("certs: node name %q: want 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", r.Name)
	}
	if strings.EqualFold(r.Name, "ca") {
		return nil, errors.New(`certs: node name "ca" would collide with the CA's files`)
	}
	dns, ips, err := ParseHosts(r.Hosts)
	if err != nil {
		return nil, err
	}
	if r.Lifetime <= 0 {
		return nil, fmt.Errorf("certs: node certificate lifetime %v: want a positive duration", r.Lifetime)
	}
	now := time.Now()
	notAfter := now.Add(r.Lifetime)
	if notAfter.After(ca.Cert.NotAfter) {
		return nil, fmt.Errorf("certs: a node certificate valid until %s would outlive its CA (valid until %s): give a shorter lifetime",
			notAfter.UTC().Format(time.DateOnly), ca.Cert.NotAfter.UTC().Format(time.DateOnly))
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: node key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: r.Name, Organization: []string{"rest.area"}},
		NotBefore:    now.Add(-Backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usages,
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("certs: sign certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: parse certificate: %w", err)
	}
	return &Node{Name: r.Name, Cert: cert, Key: key, CA: ca.Cert}, nil
}

// Save writes NAME.pem (0644), NAME-key.pem (0600) and a copy of the CA
// certificate (ca.pem, 0644) to dir, creating dir (0700) if needed. A
// ca.pem already there with the same content is left alone, so a node
// directory may be the CA directory. Without force it refuses, with an
// *ExistsError and before writing anything, when a file exists with other
// content.
func (n *Node) Save(dir string, force bool) (NodeFiles, error) {
	keyPEM, err := encodeKey(n.Key)
	if err != nil {
		return NodeFiles{}, err
	}
	certName, keyName := n.Name+".pem", n.Name+"-key.pem"
	certPEM := encodeCert(n.Cert)
	for _, c := range n.Chain {
		certPEM = append(certPEM, encodeCert(c)...)
	}
	err = writeFiles(dir, force, []file{
		{name: certName, data: certPEM, mode: 0o644},
		{name: keyName, data: keyPEM, mode: 0o600},
		{name: CACertFile, data: encodeCert(n.CA), mode: 0o644},
	})
	return NodeFiles{Cert: filepath.Join(dir, certName), Key: filepath.Join(dir, keyName), CA: filepath.Join(dir, CACertFile)}, err
}

// ParseHosts splits hosts into DNS names and IP addresses, in order and
// without duplicates. Each entry may itself be a comma-separated list. A
// host with a port, an empty list or a malformed name is an error.
func ParseHosts(hosts []string) (dns []string, ips []net.IP, err error) {
	seen := map[string]bool{}
	for _, h := range hosts {
		for _, part := range strings.Split(h, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			if ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(part, "["), "]")); ip != nil {
				if !seen[ip.String()] {
					seen[ip.String()] = true
					ips = append(ips, ip)
				}
				continue
			}
			name := strings.ToLower(strings.TrimSuffix(part, "."))
			if err := checkDNSName(name); err != nil {
				return nil, nil, fmt.Errorf("certs: host %q: %w", part, err)
			}
			if !seen[name] {
				seen[name] = true
				dns = append(dns, name)
			}
		}
	}
	if len(dns)+len(ips) == 0 {
		return nil, nil, errors.New("certs: a node certificate needs at least one host (the DNS name or IP other nodes dial it by)")
	}
	return dns, ips, nil
}

func checkDNSName(name string) error {
	if _, _, err := net.SplitHostPort(name); err == nil {
		return errors.New("give the host without a port")
	}
	if len(name) > 253 {
		return errors.New("a DNS name is at most 253 characters")
	}
	labels := strings.Split(name, ".")
	if labels[0] == "*" {
		// A wildcard stands for exactly one leftmost label (RFC 6125
		// §6.4.3, as Go and browsers verify it), and never for a whole
		// registered domain: *.peers.example, not *.example.
		if len(labels) < 3 {
			return errors.New("a wildcard needs at least two labels after it, as in *.peers.example.org")
		}
		labels = labels[1:]
	}
	for _, label := range labels {
		if label == "" || len(label) > 63 {
			return errors.New("each dot-separated label must be 1-63 characters")
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return errors.New("a label must not begin or end with '-'")
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return fmt.Errorf("%q is not allowed in a DNS name (letters, digits, '-' and '.' only, and '*' as the whole first label)", c)
			}
		}
	}
	return nil
}

// Fingerprint is the SHA-256 of the certificate's DER, as colon-separated
// hex (the form `openssl x509 -fingerprint -sha256` prints).
func Fingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	parts := make([]string, len(sum))
	for i, b := range sum {
		parts[i] = fmt.Sprintf("%02X", b)
	}
	return strings.Join(parts, ":")
}

func newSerial() (*big.Int, error) {
	s, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("certs: serial number: %w", err)
	}
	return s.Add(s, big.NewInt(1)), nil // positive, never 0
}

func encodeCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func encodeKey(k crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("certs: encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func parseCertPEM(b []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	return x509.ParseCertificate(block.Bytes)
}

func parseKeyPEM(b []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("PEM block %q is not a private key", block.Type)
	}
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("a %T cannot sign", key)
	}
	return signer, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ea, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ea.Equal(b)
}
