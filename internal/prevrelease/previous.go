package prevrelease

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrNoHistory says that the repository's git history is not there (no
// repository, a shallow clone): tests that need the previous release
// skip, saying so.
var ErrNoHistory = errors.New("no git history to build the previous release from")

// BuildPrevious returns the release before
// repo's HEAD (Previous) and the path of its binary, built into dir
// when the cache lacks it
// (Build). ErrNoHistory says the git history cannot tell or build it.
func BuildPrevious(ctx context.Context, repo, dir string, logf func(string, ...any)) (Release, string, error) {
	top, err := git(ctx, repo, "rev-parse", "--show-toplevel")
	if err != nil {
		return Release{}, "", fmt.Errorf("%w: %v", ErrNoHistory, err)
	}
	head, err := git(ctx, top, "rev-parse", "HEAD")
	if err != nil {
		return Release{}, "", fmt.Errorf("%w: %v", ErrNoHistory, err)
	}
	if shallow, err := git(ctx, top, "rev-parse", "--is-shallow-repository"); err != nil || shallow == "true" {
		return Release{}, "", fmt.Errorf("%w: %s is a shallow clone", ErrNoHistory, top)
	}
	f, err := os.Open(filepath.Join(top, "RELEASES"))
	if err != nil {
		return Release{}, "", err
	}
	rels, err := ParseReleases(f)
	f.Close()
	if err != nil {
		return Release{}, "", err
	}
	rel, err := Previous(rels, head, ancestorOf(ctx, top, head))
	if err != nil {
		return Release{}, "", err
	}
	path, built, err := Build(ctx, top, dir, rel, logf)
	if err != nil {
		return Release{}, "", err
	}
	if built {
		logf("built %s (%s) at %s", rel.Version, rel.Commit[:12], path)
	} else {
		logf("%s (%s) cached at %s", rel.Version, rel.Commit[:12], path)
	}
	return rel, path, nil
}
