package testkit

import (
	"bytes"
	"os"
	"testing"
)

// Rot plays a disk that rots under a stopped node: in the file at path it
// flips the low bit of the byte at offset at of every occurrence of
// needle, and returns how many it changed. Every copy is changed because
// a database keeps stale copies of a value in its free pages; only the
// live one matters, and which one that is the test cannot tell. It fails
// the test when needle does not occur.
func Rot(t testing.TB, path string, needle []byte, at int) int {
	t.Helper()
	if at < 0 || at >= len(needle) {
		t.Fatalf("rot: offset %d outside a needle of %d bytes", at, len(needle))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("rot: %v", err)
	}
	n := 0
	for i := 0; ; {
		j := bytes.Index(b[i:], needle)
		if j < 0 {
			break
		}
		b[i+j+at] ^= 1
		n++
		i += j + len(needle)
	}
	if n == 0 {
		t.Fatalf("rot: %q does not occur in %s", needle, path)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatalf("rot: %v", err)
	}
	return n
}
