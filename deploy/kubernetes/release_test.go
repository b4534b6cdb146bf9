package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// release is the release an upgrade to this tree starts from.
type release struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Path    string `json:"path"` // its static binary
}

// releaseImage builds an image, named prefix-VERSION, of the previous
// release: its binary from the main module's internal/prevrelease (built
// once from its commit in a temporary git worktree, cached in root/bin)
// and the Dockerfile of that commit, FROM scratch, as buildImage does for
// the current tree. Without the git history (a tarball, a shallow clone)
// the test is skipped, saying so.
func releaseImage(ctx context.Context, t *testing.T, root, prefix string) (release, string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "go", "run", "./internal/prevrelease/cmd/prevrelease", "-json", "-dir", "bin")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		t.Skipf("SKIP: %s", bytes.TrimSpace(stderr.Bytes()))
	}
	if err != nil {
		t.Fatalf("the previous release: %v\n%s", err, stderr.Bytes())
	}
	var rel release
	if err := json.Unmarshal(out, &rel); err != nil {
		t.Fatalf("prevrelease printed %q: %v", out, err)
	}
	t.Logf("%s", bytes.TrimSpace(stderr.Bytes()))
	ctxDir := t.TempDir()
	for _, f := range []string{"Dockerfile", ".dockerignore"} {
		show := exec.CommandContext(ctx, "git", "show", rel.Commit+":"+f)
		show.Dir = root
		b, err := show.Output()
		if err != nil {
			t.Fatalf("%s of %s: %v", f, rel.Version, err)
		}
		if err := os.WriteFile(filepath.Join(ctxDir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(rel.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ctxDir, "build", "image", "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "build", "image", "restarea"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	image := prefix + "-" + rel.Version
	if _, err := docker(ctx, "build", "-q", "-t", image, ctxDir); err != nil {
		t.Fatal(err)
	}
	return rel, image
}

// flagsKnown returns the flags `restarea serve` of image accepts, read
// from its -h output.
func flagsKnown(ctx context.Context, t *testing.T, image string) []string {
	t.Helper()
	// -h exits 2 after printing the flags: the output is what counts.
	out, _ := exec.CommandContext(ctx, "docker", "run", "--rm", image, "serve", "-h").CombinedOutput()
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-z0-9][a-z0-9-]*)`).FindAllSubmatch(out, -1) {
		names = append(names, string(m[1]))
	}
	if !slices.Contains(names, "data-dir") {
		t.Fatalf("`restarea serve -h` in %s lists no --data-dir: %s", image, bytes.TrimSpace(out))
	}
	return names
}

// unknownSettings lists what p gives that known (a release's flags) lacks:
// arguments (a node refuses to start with one) and RESTAREA_* variables
// (a node ignores one it does not know, silently).
func unknownSettings(p podRun, known []string) []string {
	var out []string
	for _, a := range p.args[1:] {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !slices.Contains(known, name) {
			out = append(out, "--"+name)
		}
	}
	for _, kv := range p.env {
		k, _, _ := strings.Cut(kv, "=")
		name, ok := strings.CutPrefix(k, "RESTAREA_")
		if ok && !slices.Contains(known, strings.ToLower(strings.ReplaceAll(name, "_", "-"))) {
			out = append(out, k)
		}
	}
	return out
}
