// Command prevrelease prints the path of the previous release's binary,
// building it first when the cache lacks it: the newest line of RELEASES
// whose commit is an ancestor of HEAD and differs from it, built from
// that commit in a temporary git worktree into DIR/release-VERSION/
// restarea. `make upgrade-test` runs it:
//
//	go run ./internal/prevrelease/cmd/prevrelease -dir bin
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/restarea/restarea/internal/prevrelease"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("prevrelease", flag.ContinueOnError)
	dir := fs.String("dir", "bin", "cache directory: the binary goes to DIR/release-VERSION/restarea")
	repo := fs.String("repo", ".", "the git repository (its HEAD is the current tree, its RELEASES the list)")
	asJSON := fs.Bool("json", false, `print {"version","commit","path"} instead of the path; exit 3 when the git history cannot provide the release`)
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
	rel, path, err := prevrelease.BuildPrevious(ctx, *repo, *dir, logf)
	if err != nil {
		fmt.Fprintf(os.Stderr, "prevrelease: %v\n", err)
		if errors.Is(err, prevrelease.ErrNoHistory) {
			return 3
		}
		return 1
	}
	if *asJSON {
		json.NewEncoder(os.Stdout).Encode(map[string]string{"version": rel.Version, "commit": rel.Commit, "path": path})
		return 0
	}
	fmt.Println(path)
	return 0
}
