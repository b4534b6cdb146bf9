package localcluster

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A node that dies while the cluster starts is named in Start's error,
// with how it ended, instead of only being missing from the count.
func TestStartNamesANodeThatExited(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := Start(ctx, Options{Binary: "/bin/false", Nodes: 2, Dir: t.TempDir()})
	if err == nil {
		c.Close()
		t.Fatal("a cluster of /bin/false started")
	}
	if !strings.Contains(err.Error(), "exited (exit status 1)") || !strings.Contains(err.Error(), "stopped while the cluster started") {
		t.Fatalf("error %q does not name the exited nodes", err)
	}
}
