package prevrelease

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
)

// Release is one line of the RELEASES file: a version and the commit it
// was built from.
type Release struct {
	Version string
	Commit  string
	Date    string
}

var (
	versionRE = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$`)
	commitRE  = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// ParseReleases reads RELEASES: one "version commit date" line per
// release, oldest first; blank lines and lines starting with # are
// comments. A malformed line is an error naming its line and field.
func ParseReleases(r io.Reader) ([]Release, error) {
	var out []Release
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("RELEASES line %d: want \"version commit date\", got %d fields", n, len(f))
		}
		rel := Release{Version: f[0], Commit: f[1], Date: f[2]}
		switch _, err := time.Parse(time.DateOnly, rel.Date); {
		case !versionRE.MatchString(rel.Version):
			return nil, fmt.Errorf("RELEASES line %d: version %q is not vMAJOR.MINOR.PATCH", n, rel.Version)
		case !commitRE.MatchString(rel.Commit):
			return nil, fmt.Errorf("RELEASES line %d: commit %q is not 40 lowercase hex digits", n, rel.Commit)
		case err != nil:
			return nil, fmt.Errorf("RELEASES line %d: date %q is not YYYY-MM-DD", n, rel.Date)
		}
		out = append(out, rel)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Previous returns the release the current tree (commit head) upgrades
// from: the newest release whose commit is an ancestor of head and
// differs from it. A release made from head itself is the current one,
// and a release on another branch is not this tree's past.
func Previous(rels []Release, head string, isAncestor func(commit string) (bool, error)) (Release, error) {
	for i := len(rels) - 1; i >= 0; i-- {
		rel := rels[i]
		if rel.Commit == head {
			continue
		}
		ok, err := isAncestor(rel.Commit)
		if err != nil {
			return Release{}, fmt.Errorf("is %s (%s) an ancestor of %s: %w", rel.Version, rel.Commit, head, err)
		}
		if ok {
			return rel, nil
		}
	}
	return Release{}, errors.New("no release in RELEASES is an ancestor of HEAD other than HEAD itself")
}
