package prevrelease

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// git runs git in dir and returns its trimmed output; exit status 1 with
// no output is returned as errExit1 (merge-base --is-ancestor's "no").
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 && stderr.Len() == 0 {
			return "", errExit1
		}
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

var errExit1 = errors.New("exit status 1")

// ancestorOf returns the test Previous needs: git merge-base
// --is-ancestor commit head in repo.
func ancestorOf(ctx context.Context, repo, head string) func(string) (bool, error) {
	return func(commit string) (bool, error) {
		_, err := git(ctx, repo, "merge-base", "--is-ancestor", commit, head)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, errExit1):
			return false, nil
		}
		return false, err
	}
}

// binaryPath is where the cache keeps a release's binary under dir.
func binaryPath(dir string, rel Release) string {
	return filepath.Join(dir, "release-"+rel.Version, "restarea")
}

// Build returns the path of rel's binary under dir, building it only when
// it is missing: its commit checked out in a temporary git worktree of
// repo (removed afterwards), CGO_ENABLED=0 go build -trimpath, its
// version stamped where that release reads it. built says whether it was
// built now.
func Build(ctx context.Context, repo, dir string, rel Release, logf func(string, ...any)) (path string, built bool, err error) {
	path, err = filepath.Abs(binaryPath(dir, rel))
	if err != nil {
		return "", false, err
	}
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
		return path, false, nil
	}
	tmp, err := os.MkdirTemp("", "restarea-release-")
	if err != nil {
		return "", false, err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "src")
	if _, err := git(ctx, repo, "worktree", "add", "--detach", src, rel.Commit); err != nil {
		return "", false, err
	}
	defer func() {
		if _, rerr := git(context.WithoutCancel(ctx), repo, "worktree", "remove", "--force", src); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	logf("building %s (%s) in %s", rel.Version, rel.Commit, src)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", false, err
	}
	// A name of its own: test packages that run at once may each build
	// the same release, and the last rename wins with an identical binary.
	f, err := os.CreateTemp(filepath.Dir(path), "restarea.part-*")
	if err != nil {
		return "", false, err
	}
	part := f.Name()
	f.Close()
	// -X of a symbol a release does not have is ignored: releases up to
	// v0.1.0 read main.version, later ones internal/buildinfo.version.
	ldflags := "-X main.version=" + rel.Version + " -X github.com/restarea/restarea/internal/buildinfo.version=" + rel.Version
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", part, "./cmd/restarea")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(part)
		return "", false, fmt.Errorf("go build of %s: %v: %s", rel.Version, err, out)
	}
	if err := os.Rename(part, path); err != nil {
		os.Remove(part)
		return "", false, err
	}
	return path, true, nil
}
