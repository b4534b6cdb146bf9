package kubernetes

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// release is one line of the repository's RELEASES file.
type release struct {
	version, commit string
}

// gitIn runs git in dir and returns its trimmed output.
func gitIn(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	s := strings.TrimSpace(string(out))
	if err != nil {
		return s, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, s)
	}
	return s, nil
}

// previousRelease reads root's RELEASES (version commit date, oldest
// first) and returns the newest release that is not the checked-out
// commit itself and, where git can tell (isAncestor not nil), is an
// ancestor of it: the release an upgrade to this tree starts from. head
// is "" when git cannot say which commit is checked out.
func previousRelease(root, head string, isAncestor func(commit string) bool) (release, error) {
	f, err := os.Open(filepath.Join(root, "RELEASES"))
	if err != nil {
		return release{}, err
	}
	defer f.Close()
	var all []release
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 || !strings.HasPrefix(fields[0], "v") || !regexp.MustCompile(`^[0-9a-f]{7,40}$`).MatchString(fields[1]) {
			return release{}, fmt.Errorf("RELEASES line %d: %q: want `version commit date`", n, line)
		}
		all = append(all, release{version: fields[0], commit: fields[1]})
	}
	if err := sc.Err(); err != nil {
		return release{}, err
	}
	for i := len(all) - 1; i >= 0; i-- {
		if head != "" && strings.HasPrefix(head, all[i].commit) {
			continue
		}
		if isAncestor == nil || isAncestor(all[i].commit) {
			return all[i], nil
		}
	}
	return release{}, fmt.Errorf("RELEASES lists no release before the checked-out commit %q", head)
}

// releaseImage builds an image, named prefix-VERSION, from the previous
// release's commit: a static
// binary built in a temporary `git worktree` of the repository this test
// runs in (removed afterwards), then the Dockerfile of that commit, FROM
// scratch, as buildImage does for the current tree. The binary and the
// commit's Dockerfile are cached under root/bin/release-COMMIT/, so later
// runs need neither git nor a build. Without the git history (a tarball,
// a shallow clone) the test is skipped, saying so.
func releaseImage(ctx context.Context, t *testing.T, root, prefix string) (release, string) {
	t.Helper()
	var rel release
	head, err := gitIn(ctx, ".", "rev-parse", "HEAD")
	var isAncestor func(string) bool
	if err == nil {
		isAncestor = func(commit string) bool {
			if _, err := gitIn(ctx, ".", "cat-file", "-e", commit+"^{commit}"); err != nil {
				return true // not in this history (a shallow clone): a cached build may still serve
			}
			_, err := gitIn(ctx, ".", "merge-base", "--is-ancestor", commit, "HEAD")
			return err == nil
		}
	} else {
		head = ""
	}
	rel, err = previousRelease(root, head, isAncestor)
	if err != nil {
		t.Fatal(err)
	}
	image := prefix + "-" + rel.version
	cache := filepath.Join(root, "bin", "release-"+rel.commit)
	cached := true
	for _, f := range []string{"Dockerfile", ".dockerignore", filepath.Join("build", "image", "restarea")} {
		if _, err := os.Stat(filepath.Join(cache, f)); err != nil {
			cached = false
		}
	}
	if !cached {
		buildRelease(ctx, t, rel, cache)
	} else {
		t.Logf("%s: the binary cached in %s", rel.version, cache)
	}
	if err := os.MkdirAll(filepath.Join(cache, "build", "image", "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := docker(ctx, "build", "-q", "-t", image, cache); err != nil {
		t.Fatal(err)
	}
	return rel, image
}

// buildRelease builds rel's binary and copies its Dockerfile and
// .dockerignore into cache, or skips the test when the repository's
// history does not hold rel's commit.
func buildRelease(ctx context.Context, t *testing.T, rel release, cache string) {
	t.Helper()
	repo, err := gitIn(ctx, ".", "rev-parse", "--show-toplevel")
	if err != nil {
		t.Skipf("SKIP: no git history to build %s (%s) from, and no cached build: %v", rel.version, rel.commit, err)
	}
	full, err := gitIn(ctx, repo, "rev-parse", "--verify", "--quiet", rel.commit+"^{commit}")
	if err != nil {
		t.Skipf("SKIP: the git history here lacks %s's commit %s (a shallow clone?), and there is no cached build in %s", rel.version, rel.commit, cache)
	}
	src := filepath.Join(t.TempDir(), "src")
	if _, err := gitIn(ctx, repo, "worktree", "add", "--detach", src, full); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := gitIn(context.Background(), repo, "worktree", "remove", "--force", src); err != nil {
			t.Errorf("removing the worktree of %s: %v", rel.version, err)
		}
	}()
	t.Logf("%s: building commit %s in a temporary worktree", rel.version, full)
	goBin := "go"
	if _, err := exec.LookPath(goBin); err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	tmp := filepath.Join(src, "restarea.static")
	// The version goes where the release's code reads it: main.version in
	// the first releases, internal/buildinfo later; the linker ignores an
	// -X for a variable the build does not have.
	ldflags := fmt.Sprintf("-s -w -X main.version=%s -X github.com/restarea/restarea/internal/buildinfo.version=%s", rel.version, rel.version)
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-ldflags", ldflags, "-o", tmp, "./cmd/restarea")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build of %s: %v\n%s", rel.version, err, out)
	}
	if err := os.MkdirAll(filepath.Join(cache, "build", "image"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"Dockerfile", ".dockerignore"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cache, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The binary last, by rename: its presence marks a complete cache.
	b, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(cache, "build", "image", "restarea")
	if err := os.WriteFile(dst+".tmp", b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dst+".tmp", dst); err != nil {
		t.Fatal(err)
	}
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

// The release an upgrade starts from: the newest line of RELEASES that is
// not the checked-out commit and is one of its ancestors; a malformed line
// is an error naming it.
func TestPreviousRelease(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "RELEASES"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("# version commit date\nv0.1.0 aaaaaaa 2026-12-04\n\nv0.2.0 bbbbbbb 2027-01-10\nv0.3.0 ccccccc 2027-02-01\n")
	for _, c := range []struct {
		head     string
		ancestor func(string) bool
		want     string
	}{
		{"", nil, "v0.3.0"},
		{"ddddddd", nil, "v0.3.0"},
		{"ccccccc0123", nil, "v0.2.0"}, // the tree is v0.3.0 itself
		{"ddddddd", func(c string) bool { return c != "ccccccc" }, "v0.2.0"}, // v0.3.0 on another branch
		{"ddddddd", func(c string) bool { return c == "aaaaaaa" }, "v0.1.0"}, // two releases elsewhere
		{"ccccccc", func(c string) bool { return c != "bbbbbbb" }, "v0.1.0"}, // HEAD and a non-ancestor
	} {
		got, err := previousRelease(dir, c.head, c.ancestor)
		if err != nil || got.version != c.want {
			t.Errorf("head %q: got %+v %v, want %s", c.head, got, err, c.want)
		}
	}
	if _, err := previousRelease(dir, "aaaaaaa", func(string) bool { return false }); err == nil {
		t.Error("no ancestor: want an error")
	}
	write("v0.1.0 c6a0393\n")
	if _, err := previousRelease(dir, "", nil); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a line without its date: got %v, want an error naming line 1", err)
	}
}
