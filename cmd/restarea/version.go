package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=..." (the
// Makefile does). Read it through buildVersion, which falls back on what
// the Go toolchain recorded.
var version = "dev"

// buildVersion is the one version string of this binary: `restarea
// version` prints it, nodes report it in the MCP handshake
// (serverInfo.version) and in their logs. It is the -X main.version value
// when one was given; otherwise the module version go install recorded
// (v1.2.3); otherwise "dev" followed by the VCS revision go build
// recorded (dev+1a2b3c4d5e6f, "-dirty" for a modified tree), or plain "dev"
// when none was (go run, go test).
func buildVersion() string {
	if version != "dev" && version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "dev+" + rev
}

func init() {
	register("version", "print the version", func(args []string) int {
		rev := ""
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					rev = " " + s.Value
				}
			}
		}
		fmt.Printf("restarea %s%s %s %s/%s\n", buildVersion(), rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return 0
	})
}
