package buildinfo

import (
	"runtime/debug"
	"testing"
)

// Every fallback, in order: the stamp, the module version, the VCS
// revision (dirty or not), nothing at all.
func TestFallbacks(t *testing.T) {
	const rev = "c6a03939344b45c9aa971e9385eca294c0dc2199"
	info := func(mainVersion string, settings ...debug.BuildSetting) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{Main: debug.Module{Version: mainVersion}, Settings: settings}, true
		}
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	vcs := debug.BuildSetting{Key: "vcs.revision", Value: rev}
	dirty := debug.BuildSetting{Key: "vcs.modified", Value: "true"}
	clean := debug.BuildSetting{Key: "vcs.modified", Value: "false"}
	for _, c := range []struct {
		name            string
		stampV, stampC  string
		read            func() (*debug.BuildInfo, bool)
		version, commit string
	}{
		{"stamped", "v1.2.3", rev, info("(devel)", vcs, dirty), "v1.2.3", rev},
		{"go install", "", "", info("v0.4.0"), "v0.4.0", Unknown},
		{"go build clean", "", "", info("(devel)", vcs, clean), "dev+c6a03939344b", rev},
		{"go build dirty", "", "", info("(devel)", vcs, dirty), "dev+c6a03939344b-dirty", rev + "-dirty"},
		{"go run", "", "", info("(devel)"), Dev, Unknown},
		{"no build info", "", "", none, Dev, Unknown},
	} {
		if got := versionFrom(c.stampV, c.read); got != c.version {
			t.Errorf("%s: version %q, want %q", c.name, got, c.version)
		}
		if got := commitFrom(c.stampC, c.read); got != c.commit {
			t.Errorf("%s: commit %q, want %q", c.name, got, c.commit)
		}
	}
	if Version() == "" || Commit() == "" {
		t.Fatalf("Version %q, Commit %q: never empty", Version(), Commit())
	}
}
