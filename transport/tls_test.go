package transport

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadTLS(t *testing.T) {
	p := newPKI(t)
	cert, key := p.Issue("node")
	cfg, err := LoadTLS(cert, key, p.CAFile)
	if err != nil {
		t.Fatalf("LoadTLS: %v", err)
	}
	if cfg.MinVersion != tls.VersionTLS13 || cfg.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Fatalf("MinVersion %x ClientAuth %v; want TLS 1.3 and required client certs", cfg.MinVersion, cfg.ClientAuth)
	}

	otherCert, otherKey := newPKI(t).Issue("foreign")
	serverOnly, serverOnlyKey := p.Issue("serveronly", x509.ExtKeyUsageServerAuth)
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing.pem")

	for _, tc := range []struct {
		name          string
		cert, key, ca string
		mustMention   string
	}{
		{"missing certificate", missing, key, p.CAFile, missing},
		{"missing key", cert, missing, p.CAFile, missing},
		{"missing CA", cert, key, missing, missing},
		{"garbage certificate", garbage, key, p.CAFile, garbage},
		{"key does not match", cert, otherKey, p.CAFile, otherKey},
		{"garbage CA", cert, key, garbage, garbage},
		{"certificate from another CA", otherCert, otherKey, p.CAFile, otherCert},
		{"certificate without client auth", serverOnly, serverOnlyKey, p.CAFile, "client auth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadTLS(tc.cert, tc.key, tc.ca)
			if err == nil {
				t.Fatal("LoadTLS succeeded")
			}
			if !strings.Contains(err.Error(), tc.mustMention) {
				t.Fatalf("error %q does not mention %q", err, tc.mustMention)
			}
		})
	}
}

func TestListenRejectsUnusableTLS(t *testing.T) {
	good := newPKI(t).nodeTLS("a")
	for name, mutate := range map[string]func(*tls.Config){
		"no certificate":       func(c *tls.Config) { c.Certificates = nil },
		"no CA":                func(c *tls.Config) { c.RootCAs = nil },
		"verification skipped": func(c *tls.Config) { c.InsecureSkipVerify = true },
	} {
		cfg := good.Clone()
		mutate(cfg)
		if m, err := Listen(Config{BindAddr: "127.0.0.1:0", TLS: cfg}); err == nil {
			m.Close()
			t.Fatalf("%s: Listen accepted the config", name)
		}
	}
}

func TestServerTLSForcesClientCertificates(t *testing.T) {
	base := newPKI(t).nodeTLS("a")
	base.ClientAuth = tls.NoClientCert
	base.ClientCAs = nil
	base.MinVersion = tls.VersionTLS12
	s := serverTLS(base)
	if s.ClientAuth != tls.RequireAndVerifyClientCert || s.ClientCAs != base.RootCAs || s.MinVersion != tls.VersionTLS13 {
		t.Fatalf("server TLS not hardened: %+v", s)
	}
	if base.ClientAuth != tls.NoClientCert {
		t.Fatal("serverTLS modified the caller's config")
	}
}
