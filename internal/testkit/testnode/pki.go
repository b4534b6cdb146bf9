package testnode

import (
	"crypto/tls"
	"testing"

	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/transport"
)

// MutualTLS makes a fresh CA and a node certificate for 127.0.0.1 (good
// for server and client authentication) and returns the node's TLS
// configuration, loaded the way `restarea serve --tls-cert --tls-key
// --tls-ca` loads it. Every node of a test cluster can share it.
func MutualTLS(t testing.TB) *tls.Config {
	t.Helper()
	p := testkit.NewPKI(t)
	cert, key := p.Issue("restarea node")
	cfg, err := transport.LoadTLS(cert, key, p.CAFile)
	if err != nil {
		t.Fatalf("load test TLS: %v", err)
	}
	return cfg
}
