// Command prevrelease prints the path of the previous release's binary,
// building it first when the cache lacks it: the newest line of RELEASES
// whose commit is an ancestor of HEAD and differs from it, built from
// that commit in a temporary git worktree into DIR/release-VERSION/
// restarea. `make upgrade-test` runs it:
//
//	go run ./internal/prevrelease -dir bin
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("prevrelease", flag.ContinueOnError)
	dir := fs.String("dir", "bin", "cache directory: the binary goes to DIR/release-VERSION/restarea")
	repo := fs.String("repo", ".", "the git repository (its HEAD is the current tree, its RELEASES the list)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "prevrelease: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "prevrelease: "+format+"\n", a...) }
	path, err := previous(ctx, *repo, *dir, logf)
	if err != nil {
		fmt.Fprintf(os.Stderr, "prevrelease: %v\n", err)
		return 1
	}
	fmt.Println(path)
	return 0
}

// previous chooses the previous release of repo's HEAD and builds it.
func previous(ctx context.Context, repo, dir string, logf func(string, ...any)) (string, error) {
	top, err := git(ctx, repo, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", err
	}
	head, err := git(ctx, top, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	f, err := os.Open(filepath.Join(top, "RELEASES"))
	if err != nil {
		return "", err
	}
	rels, err := ParseReleases(f)
	f.Close()
	if err != nil {
		return "", err
	}
	rel, err := Previous(rels, head, ancestorOf(ctx, top, head))
	if err != nil {
		return "", err
	}
	path, built, err := Build(ctx, top, dir, rel, logf)
	if err != nil {
		return "", err
	}
	if built {
		logf("built %s (%s) at %s", rel.Version, rel.Commit[:12], path)
	} else {
		logf("%s (%s) cached at %s", rel.Version, rel.Commit[:12], path)
	}
	return path, nil
}
