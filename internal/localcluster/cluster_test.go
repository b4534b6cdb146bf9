package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A node that dies while the cluster starts is named in Start's error,
// with how it ended, instead of only being missing from the count.
func TestStartNamesANodeThatExited(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// A binary that lists its flags and then fails to serve.
	bin := filepath.Join(t.TempDir(), "restarea")
	script := "#!/bin/sh\nif [ \"$1 $2\" = \"serve --help\" ]; then echo '  -node-id string' >&2; exit 2; fi\n" +
		"if [ \"$1\" = version ]; then echo restarea; exit 0; fi\nexit 1\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := Start(ctx, Options{Binary: bin, Nodes: 2, Dir: t.TempDir()})
	if err == nil {
		c.Close()
		t.Fatal("a cluster of /bin/false started")
	}
	if !strings.Contains(err.Error(), "exited (exit status 1)") || !strings.Contains(err.Error(), "stopped while the cluster started") {
		t.Fatalf("error %q does not name the exited nodes", err)
	}
}
