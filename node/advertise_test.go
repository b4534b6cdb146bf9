package node

import (
	"net"
	"testing"
)

func TestDefaultAdvertise(t *testing.T) {
	for _, bind := range []string{"127.0.0.1:8300", "10.1.2.3:8300", "node1:8300", "127.0.0.1:0"} {
		if got := defaultAdvertise(bind); got != "" {
			t.Errorf("defaultAdvertise(%q) = %q, want the bind address kept", bind, got)
		}
	}
	for _, bind := range []string{"0.0.0.0:8300", ":8300", "[::]:8300"} {
		got := defaultAdvertise(bind)
		host, port, err := net.SplitHostPort(got)
		if err != nil || port != "8300" || net.ParseIP(host) == nil || net.ParseIP(host).IsUnspecified() {
			t.Errorf("defaultAdvertise(%q) = %q, want a dialable address on port 8300", bind, got)
		}
	}
}
