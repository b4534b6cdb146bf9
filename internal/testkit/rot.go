package testkit

import (
	"bytes"
	"os"
	"testing"
)

// Rot plays a disk that rots under a node: in the file at path it flips
// the low bit of the byte at offset at of every occurrence of needle, in
// place (a node that has the file mapped sees the change as a rotted
// sector would show it), and returns the needle as it now reads. Every
// copy is changed because a database keeps stale copies of a value in its
// free pages; only the live one matters, and which one that is the test
// cannot tell. It fails the test when needle does not occur.
func Rot(t testing.TB, path string, needle []byte, at int) []byte {
	t.Helper()
	if at < 0 || at >= len(needle) {
		t.Fatalf("rot: offset %d outside a needle of %d bytes", at, len(needle))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("rot: %v", err)
	}
	damaged := bytes.Clone(needle)
	damaged[at] ^= 1 // an ASCII letter or digit stays one: only a checksum can tell
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("rot: %v", err)
	}
	defer f.Close()
	n := 0
	for i := 0; ; {
		j := bytes.Index(data[i:], needle)
		if j < 0 {
			break
		}
		if _, err := f.WriteAt(damaged, int64(i+j)); err != nil {
			t.Fatalf("rot: %v", err)
		}
		n++
		i += j + len(needle)
	}
	if n == 0 {
		t.Fatalf("rot: %q does not occur in %s", needle, path)
	}
	return damaged
}

// RotMiddle flips a bit of the byte in the middle of the file at path, in
// place: damage to a file whose own check (a checksum, a parser) must
// notice it.
func RotMiddle(t testing.TB, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("rot: %v", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		t.Fatalf("rot: %s is empty (%v)", path, err)
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, st.Size()/2); err != nil {
		t.Fatalf("rot: %v", err)
	}
	b[0] ^= 0x20
	if _, err := f.WriteAt(b, st.Size()/2); err != nil {
		t.Fatalf("rot: %v", err)
	}
}
