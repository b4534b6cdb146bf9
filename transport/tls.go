package transport

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// LoadTLS builds a mutual-TLS configuration from PEM files: this node's
// certificate and key, and the cluster CA that signs every node. The result
// requires TLS 1.3, trusts only that CA in both directions, and is checked
// up front: the certificate must chain to the CA and be usable for both
// server and client authentication, since every node is both. Errors name
// the file at fault.
func LoadTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("transport: read certificate file: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("transport: read key file: %w", err)
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("transport: read CA file: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("transport: certificate %s with key %s: %w", certFile, keyFile, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("transport: CA file %s holds no PEM certificate", caFile)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("transport: certificate %s: %w", certFile, err)
	}
	intermediates := x509.NewCertPool()
	for _, der := range pair.Certificate[1:] {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("transport: certificate %s: chain: %w", certFile, err)
		}
		intermediates.AddCert(c)
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: intermediates, KeyUsages: []x509.ExtKeyUsage{usage}})
		if err != nil {
			return nil, fmt.Errorf("transport: certificate %s is not valid under CA %s for %s: %w", certFile, caFile, usageName(usage), err)
		}
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{pair},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}, nil
}

func usageName(u x509.ExtKeyUsage) string {
	if u == x509.ExtKeyUsageServerAuth {
		return "server auth"
	}
	return "client auth"
}

// serverTLS derives the accepting side from the configured TLS: a client
// certificate signed by the cluster CA is always required, whatever the
// caller set, because the port carries raft and the internal channel.
func serverTLS(base *tls.Config) *tls.Config {
	c := base.Clone()
	c.ClientAuth = tls.RequireAndVerifyClientCert
	if c.ClientCAs == nil {
		c.ClientCAs = c.RootCAs
	}
	if c.MinVersion < tls.VersionTLS13 {
		c.MinVersion = tls.VersionTLS13
	}
	return c
}

// clientTLS derives the dialing side for one peer host. The peer's
// certificate is verified against RootCAs and, unless the caller pinned a
// ServerName, against the host being dialed, so node certificates must name
// their advertise host (IP or DNS SAN).
func clientTLS(base *tls.Config, host string) *tls.Config {
	c := base.Clone()
	if c.ServerName == "" {
		c.ServerName = host
	}
	if c.MinVersion < tls.VersionTLS13 {
		c.MinVersion = tls.VersionTLS13
	}
	return c
}
