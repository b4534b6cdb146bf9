//go:build race

package web

// raceBuild is true under -race, whose instrumentation makes rendering
// tens of times slower: time bounds measure the real build only.
const raceBuild = true
