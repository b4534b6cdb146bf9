// Package buildinfo is the one place a rest.area binary learns its own
// identity: the version and the commit it was built from. `restarea
// version`, the first log line of `restarea serve`, the MCP handshake and
// GET /api/v1/cluster all read them here, so they cannot disagree.
//
// A release build stamps both with the linker (make release does):
//
//	go build -ldflags "-X github.com/restarea/restarea/internal/buildinfo.version=v1.2.3 \
//	  -X github.com/restarea/restarea/internal/buildinfo.commit=$(git rev-parse HEAD)" ./cmd/restarea
//
// An unstamped build falls back on what the Go toolchain recorded in the
// binary (runtime/debug.ReadBuildInfo).
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Package is this package's import path, which -X names.
const Package = "github.com/restarea/restarea/internal/buildinfo"

// LinkerFlags is the -ldflags text that stamps a build with version and
// commit (one -X each; an empty one is left out).
func LinkerFlags(version, commit string) string {
	var f []string
	if version != "" {
		f = append(f, "-X "+Package+".version="+version)
	}
	if commit != "" {
		f = append(f, "-X "+Package+".commit="+commit)
	}
	return strings.Join(f, " ")
}

// Set by the linker (-X); empty in an unstamped build.
var (
	version string
	commit  string
)

// Dev is the version of a build that has none: neither stamped nor
// recorded by the toolchain (go run, go test without VCS data).
const Dev = "dev"

// Unknown is the commit of a build whose commit nobody recorded.
const Unknown = "unknown"

// Version is this binary's version, never empty: the -X version when the
// build set one; else the module version go install recorded (v1.2.3);
// else "dev+" and the first 12 digits of the VCS revision go build
// recorded ("-dirty" appended for a modified tree); else "dev".
func Version() string {
	return versionFrom(version, read)
}

// Commit is the full commit this binary was built from, never empty: the
// -X commit when the build set one; else the vcs.revision go build
// recorded, with "-dirty" appended when the tree was modified; else
// "unknown".
func Commit() string {
	return commitFrom(commit, read)
}

// read is debug.ReadBuildInfo; the tests hand their own.
func read() (*debug.BuildInfo, bool) { return debug.ReadBuildInfo() }

func versionFrom(stamped string, read func() (*debug.BuildInfo, bool)) string {
	if stamped != "" {
		return stamped
	}
	bi, ok := read()
	if !ok {
		return Dev
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := revision(bi)
	if rev == "" {
		return Dev
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return Dev + "+" + rev
}

func commitFrom(stamped string, read func() (*debug.BuildInfo, bool)) string {
	if stamped != "" {
		return stamped
	}
	bi, ok := read()
	if !ok {
		return Unknown
	}
	rev, dirty := revision(bi)
	if rev == "" {
		return Unknown
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// revision is the vcs.revision and vcs.modified settings of bi.
func revision(bi *debug.BuildInfo) (rev string, dirty bool) {
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	return rev, dirty
}
