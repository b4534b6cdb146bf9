package main

import (
	"fmt"
	"runtime"

	"github.com/restarea/restarea/internal/buildinfo"
)

func init() {
	register("version", "print the version and commit", func(args []string) int {
		fmt.Printf("restarea %s %s %s %s/%s\n", buildinfo.Version(), buildinfo.Commit(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return 0
	})
}
