package prevrelease

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const c1, c2, c3 = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222", "3333333333333333333333333333333333333333"

func TestParseReleases(t *testing.T) {
	rels, err := ParseReleases(strings.NewReader("# version commit date\n\nv0.1.0 " + c1 + " 2026-12-04\n  v0.2.0-rc.1 " + c2 + " 2026-12-05  \n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rels) != 2 || rels[0] != (Release{"v0.1.0", c1, "2026-12-04"}) || rels[1].Version != "v0.2.0-rc.1" {
		t.Errorf("parsed %+v", rels)
	}
	for text, want := range map[string]string{
		"v0.1.0 " + c1:                       "line 1: want \"version commit date\", got 2 fields",
		"\n0.1.0 " + c1 + " 2026-12-04":      "line 2: version \"0.1.0\"",
		"v0.1.0 c6a0393 2026-12-04":          "line 1: commit \"c6a0393\"",
		"v0.1.0 " + c1 + " 04.12.2026":       "line 1: date \"04.12.2026\"",
		"v0.1.0 " + c1 + " 2026-12-04 extra": "got 4 fields",
	} {
		if _, err := ParseReleases(strings.NewReader(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to say %q", text, err, want)
		}
	}
}

// The previous release is the newest line whose commit is an ancestor of
// HEAD and is not HEAD itself.
func TestPrevious(t *testing.T) {
	rels := []Release{{"v0.1.0", c1, "2026-12-01"}, {"v0.2.0", c2, "2026-12-02"}, {"v0.3.0", c3, "2026-12-03"}}
	ancestors := func(set ...string) func(string) (bool, error) {
		return func(c string) (bool, error) {
			for _, s := range set {
				if s == c {
					return true, nil
				}
			}
			return false, nil
		}
	}
	for _, tc := range []struct {
		name, head string
		anc        []string
		want       string
	}{
		{"the newest ancestor", "4444444444444444444444444444444444444444", []string{c1, c2, c3}, "v0.3.0"},
		{"HEAD is the newest release", c3, []string{c1, c2, c3}, "v0.2.0"},
		{"a release on another branch", "4444444444444444444444444444444444444444", []string{c1, c2}, "v0.2.0"},
		{"the only release", "4444444444444444444444444444444444444444", []string{c1}, "v0.1.0"},
	} {
		got, err := Previous(rels, tc.head, ancestors(tc.anc...))
		if err != nil || got.Version != tc.want {
			t.Errorf("%s: %+v %v, want %s", tc.name, got, err, tc.want)
		}
	}
	if _, err := Previous(rels[:1], c1, ancestors(c1)); err == nil {
		t.Error("HEAD is the only release: no error")
	}
	if _, err := Previous(nil, c1, ancestors()); err == nil {
		t.Error("no releases: no error")
	}
}

// Against a real repository: the release's commit is checked out in a
// worktree that is removed afterwards, built once, and then taken from
// the cache; a commit on another branch is not chosen.
func TestBuildFromARepository(t *testing.T) {
	if testing.Short() {
		t.Skip("runs git and go build; skipped with -short")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ctx := context.Background()
	repo := t.TempDir()
	gitT := func(args ...string) string {
		t.Helper()
		out, err := git(ctx, repo, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitT("init", "-q", "-b", "main")
	gitT("config", "user.email", "t@example.com")
	gitT("config", "user.name", "t")
	write("go.mod", "module example.com/r\n\ngo 1.22\n")
	write("cmd/restarea/main.go", "package main\n\nimport \"fmt\"\n\nvar version = \"dev\"\n\nfunc main() { fmt.Println(\"restarea\", version) }\n")
	gitT("add", ".")
	gitT("commit", "-q", "-m", "one")
	old := gitT("rev-parse", "HEAD")
	gitT("checkout", "-q", "-b", "side")
	write("side.txt", "x")
	gitT("add", ".")
	gitT("commit", "-q", "-m", "side")
	side := gitT("rev-parse", "HEAD")
	gitT("checkout", "-q", "main")
	write("later.txt", "y")
	gitT("add", ".")
	gitT("commit", "-q", "-m", "two")
	write("RELEASES", "# releases\nv0.1.0 "+old+" 2026-12-01\nv0.2.0 "+side+" 2026-12-02\n")

	dir := t.TempDir()
	_, path, err := BuildPrevious(ctx, repo, dir, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, "release-v0.1.0", "restarea") {
		t.Errorf("path %s", path)
	}
	out, err := exec.Command(path).Output()
	if err != nil || strings.TrimSpace(string(out)) != "restarea v0.1.0" {
		t.Errorf("the built binary says %q %v", out, err)
	}
	if wts := gitT("worktree", "list"); strings.Count(wts, "\n") != 0 {
		t.Errorf("worktrees left:\n%s", wts)
	}
	rel := Release{"v0.1.0", old, "2026-12-01"}
	if _, built, err := Build(ctx, repo, dir, rel, t.Logf); err != nil || built {
		t.Errorf("second build: built %v, %v; want the cached binary", built, err)
	}
}
