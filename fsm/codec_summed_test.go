package fsm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/restarea/restarea/fsm"
)

func mustSeal(t testing.TB, c *fsm.Command) []byte {
	t.Helper()
	b, err := c.EncodeSummed()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The envelope is format byte 3, the CRC-32C of the version 2 bytes
// big-endian, then those bytes; it decodes to the command they carry, for
// every kind of command the generator makes (binary and JSON kinds).
func TestEncodeSummedRoundTrip(t *testing.T) {
	g := &cmdGen{t: t, rng: rand.New(rand.NewSource(3)), invalid: true}
	for range 300 {
		c := g.command()
		sealed, inner := mustSeal(t, c), mustEncode(t, c)
		if sealed[0] != 3 || !bytes.Equal(sealed[5:], inner) {
			t.Fatalf("envelope %x does not carry the version 2 bytes %x", sealed, inner)
		}
		if got := binary.BigEndian.Uint32(sealed[1:5]); got != fsm.Checksum(inner) {
			t.Fatalf("stored checksum %08x, want %08x", got, fsm.Checksum(inner))
		}
		if err := fsm.VerifyCommand(sealed); err != nil {
			t.Fatalf("VerifyCommand: %v", err)
		}
		if got, want := mustDecode(t, sealed), mustDecode(t, inner); !reflect.DeepEqual(got, want) {
			t.Fatalf("envelope decodes to %#v, the version 2 bytes to %#v", got, want)
		}
	}
}

// Every single flipped bit of an envelope — in its checksum or in the
// command — and every cut before the command is complete is a
// *CorruptError naming raft.db, never a command or a panic. The legacy
// formats carry no checksum and still decode.
func TestDecodeCommandDamagedEnvelope(t *testing.T) {
	c := postCmd(question(t, "a question whose body will rot"), "192.0.2.1", "a1")
	c.Time = t0
	sealed := mustSeal(t, &c)
	for i := 1; i < len(sealed); i++ {
		for bit := range 8 {
			b := bytes.Clone(sealed)
			b[i] ^= 1 << bit
			got, err := fsm.DecodeCommand(b)
			var ce *fsm.CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, fsm.ErrCorrupt) {
				t.Fatalf("byte %d bit %d flipped: decoded %+v, %v; want a *CorruptError", i, bit, got, err)
			}
			if ce.File != "raft.db" || ce.Want == ce.Got {
				t.Fatalf("byte %d bit %d: %+v, want raft.db with differing checksums", i, bit, ce)
			}
			if fsm.VerifyCommand(b) == nil {
				t.Fatalf("byte %d bit %d: VerifyCommand passed", i, bit)
			}
		}
	}
	for cut := 1; cut <= 5; cut++ {
		_, err := fsm.DecodeCommand(sealed[:cut])
		if !errors.Is(err, fsm.ErrCorrupt) {
			t.Fatalf("envelope cut to %d bytes: %v, want a *CorruptError", cut, err)
		}
	}
	// Cut inside the command: the checksum no longer matches.
	if _, err := fsm.DecodeCommand(sealed[:len(sealed)-1]); !errors.Is(err, fsm.ErrCorrupt) {
		t.Fatalf("envelope cut by one byte: %v", err)
	}
	// An envelope around an envelope is refused (no recursion), as an
	// unknown format rather than as damage.
	inner := bytes.Clone(sealed)
	nested := append([]byte{3, 0, 0, 0, 0}, inner...)
	binary.BigEndian.PutUint32(nested[1:5], fsm.Checksum(inner))
	if _, err := fsm.DecodeCommand(nested); err == nil || errors.Is(err, fsm.ErrCorrupt) {
		t.Fatalf("nested envelope: %v, want an error that is not damage", err)
	}
	for name, legacy := range map[string][]byte{"v1": encodeV1(t, &c), "v2": mustEncode(t, &c)} {
		if fsm.VerifyCommand(legacy) != nil {
			t.Fatalf("%s: VerifyCommand refused a format without a checksum", name)
		}
		if got := mustDecode(t, legacy); !reflect.DeepEqual(got, mustDecode(t, sealed)) {
			t.Fatalf("%s decodes to %+v", name, got)
		}
	}
}

// A command whose envelope was damaged on this node's disk stops the state
// machine at its entry: nothing of the open transaction is kept (the file
// stays at its last commit, so a fresh copy replays from there), OnHalt is
// told once with a *CorruptError naming raft.db and the entry's index.
func TestDamagedCommandStopsApplying(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	var mu sync.Mutex
	var halts []error
	f, err := fsm.Open(path, fsm.Options{OnHalt: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		halts = append(halts, err)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := &harness{t: t, path: path, f: f, now: t0}
	seal := func(c fsm.Command) []byte {
		c.Time = h.now
		return mustSeal(t, &c)
	}
	good := seal(postCmd(question(t, "kept"), "192.0.2.1", "a1"))
	bad := seal(postCmd(question(t, "rotten"), "192.0.2.1", "a2"))
	bad[len(bad)-3] ^= 0x20
	logs := []*raft.Log{
		{Index: 1, Type: raft.LogCommand, Data: good},
		{Index: 2, Type: raft.LogCommand, Data: bad},
		{Index: 3, Type: raft.LogCommand, Data: seal(postCmd(question(t, "after"), "192.0.2.1", "a3"))},
	}
	f.ApplyBatch(logs)
	var ce *fsm.CorruptError
	if err := f.Halted(); !errors.As(err, &ce) || ce.File != "raft.db" || ce.Index != 2 {
		t.Fatalf("Halted() = %v, want a *CorruptError for raft.db at index 2", err)
	}
	mu.Lock()
	if len(halts) != 1 {
		t.Fatalf("OnHalt called %d times, want once", len(halts))
	}
	mu.Unlock()
	// Nothing of the open group survives a damaged command, not even the
	// entry before it in the batch: the file stays at its last commit.
	if f.AppliedIndex() != 0 || h.count() != 0 {
		t.Fatalf("after the stop: applied %d, %d entries; want nothing applied", f.AppliedIndex(), h.count())
	}
}
