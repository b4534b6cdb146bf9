package fsm

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/restarea/restarea"
)

// The command formats. The first byte of every log entry names its format.
// Logs, snapshots' tails and backups written by any earlier version are
// replayed by newer binaries, so DecodeCommand reads every format that was
// ever written, forever; a format is only ever added, never changed.
const (
	// commandV1 is JSON after the version byte, what every version reads
	// (see Encode).
	commandV1 byte = 1
	// commandV2 is a kind byte after the version byte, then the payload.
	commandV2 byte = 2
	// commandSummed is a checksummed envelope: the CRC-32C of the inner
	// bytes (4 bytes, big-endian), then the inner bytes, a version 2
	// command (EncodeSummed; DecodeCommand takes version 1 inside too).
	commandSummed byte = 3
)

// summedHeader is the length of the envelope before the inner command.
const summedHeader = 5

// logFile names the file a damaged command was read from: commands are
// only ever stored in the raft log.
const logFile = "raft.db"

// The payload kinds of a version 2 command.
const (
	// kindBinary is the compact form described at Encode.
	kindBinary byte = 0
	// kindJSON is the version 1 payload. Encode writes it only for a
	// command whose strings are not all valid UTF-8: JSON replaces the
	// invalid bytes, and a command must decode to the same value whichever
	// form carried it.
	kindJSON byte = 1
)

// Which optional parts follow the fixed fields of a binary command.
const (
	partPost byte = 1 << iota
	partSettings
	partExpire
	partMember
	partsKnown = partPost | partSettings | partExpire | partMember
)

// The flags byte of a binary settings command.
const (
	setWritesDisabled byte = 1 << iota // Patch.WritesDisabled != nil
	valWritesDisabled                  // *Patch.WritesDisabled
	setPerSource                       // Patch.PerSourceLimit != nil
	setGlobal                          // Patch.GlobalLimit != nil
	valFromConfig                      // FromConfig
	settingsKnown     = setWritesDisabled | valWritesDisabled | setPerSource | setGlobal | valFromConfig
)

// postStrings lists the string fields of a post command in the order the
// binary form carries them. Encoder and decoder both walk this one list,
// so they cannot disagree on the order.
func postStrings(p *PostCommand) [13]*string {
	r := &p.Request
	return [...]*string{
		&r.RequestID, &r.Type, &r.ParentID, &r.Title, &r.Body,
		&r.Actor.Name, &r.Actor.Model, &r.Actor.Trigger, &r.SubmissionMode,
		&p.Source, (*string)(&p.Channel), &p.AttemptID, &p.NewID,
	}
}

// Encode returns the log representation of c in the format every version
// reads: version 1 (JSON). A leader writes EncodeV2 instead only once the
// cluster has switched (LogFormat), so that no node still running a
// binary that cannot read version 2 meets it in the log.
func (c *Command) Encode() ([]byte, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return append([]byte{commandV1}, b...), nil
}

// EncodeV2 returns the log representation of c: version byte 2, a kind
// byte, then the compact binary form
//
//	op:str time:varint entry_id:str parts:byte [post] [settings] [expire] [member]
//	post:     request_id type parent_id title body actor.name actor.model
//	          actor.trigger submission_mode source channel attempt_id new_id :str
//	          by_operator:bool
//	settings: flags:byte, then count:varint window_seconds:varint for
//	          per_source_limit and for global_limit when present
//	expire:   retention:varint tombstone_retention:varint max_items:varint
//	member:   id:str url:str remove:bool
//
// where str is a uvarint length and that many bytes of UTF-8, varint is
// encoding/binary's zig-zag varint and bool is one byte, 0 or 1. A
// command with a string that is not valid UTF-8, or with an audit field
// (Audit, Origin: log format 3) or a cluster version target, is written as JSON (kind 1) instead, so that DecodeCommand returns exactly what it would have
// returned for the version 1 (JSON) encoding of c, whichever kind was
// written.
//
// A new field in Command or in the types it carries needs a new version
// or kind: the binary form is positional and a decoder refuses what it
// does not know rather than skipping it, because a node that ignored part
// of a command would diverge from the others.
func (c *Command) EncodeV2() ([]byte, error) { return c.encodeV2(0) }

// EncodeSummed returns the log representation of c in a checksummed
// envelope: format byte 3, the CRC-32C (Checksum) of the inner bytes as 4
// bytes big-endian, then the inner bytes, exactly what EncodeV2 returns.
// DecodeCommand refuses an envelope whose checksum does not match with a
// *CorruptError, so a command damaged on a node's disk is never applied.
// A leader writes it only at cluster version 3 (see ClusterVersionMax):
// every binary that knows version 3 reads it, no earlier one does.
func (c *Command) EncodeSummed() ([]byte, error) {
	b, err := c.encodeV2(summedHeader)
	if err != nil {
		return nil, err
	}
	b[0] = commandSummed
	binary.BigEndian.PutUint32(b[1:summedHeader], Checksum(b[summedHeader:]))
	return b, nil
}

// encodeV2 returns prefix zero bytes followed by the version 2 form of c,
// in one allocation of the binary form.
func (c *Command) encodeV2(prefix int) ([]byte, error) {
	if !c.binarySafe() {
		j, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		b := make([]byte, prefix, prefix+2+len(j))
		b = append(b, commandV2, kindJSON)
		return append(b, j...), nil
	}
	b := make([]byte, prefix, prefix+c.binarySize())
	b = append(b, commandV2, kindBinary)
	b = appendStr(b, string(c.Op))
	b = binary.AppendVarint(b, c.Time)
	b = appendStr(b, c.EntryID)
	var parts byte
	if c.Post != nil {
		parts |= partPost
	}
	if c.Settings != nil {
		parts |= partSettings
	}
	if c.Expire != nil {
		parts |= partExpire
	}
	if c.Member != nil {
		parts |= partMember
	}
	b = append(b, parts)
	if p := c.Post; p != nil {
		for _, s := range postStrings(p) {
			b = appendStr(b, *s)
		}
		b = appendBool(b, p.ByOperator)
	}
	if s := c.Settings; s != nil {
		var flags byte
		if w := s.Patch.WritesDisabled; w != nil {
			flags |= setWritesDisabled
			if *w {
				flags |= valWritesDisabled
			}
		}
		if s.Patch.PerSourceLimit != nil {
			flags |= setPerSource
		}
		if s.Patch.GlobalLimit != nil {
			flags |= setGlobal
		}
		if s.FromConfig {
			flags |= valFromConfig
		}
		b = append(b, flags)
		if l := s.Patch.PerSourceLimit; l != nil {
			b = binary.AppendVarint(b, int64(l.Count))
			b = binary.AppendVarint(b, int64(l.WindowSeconds))
		}
		if l := s.Patch.GlobalLimit; l != nil {
			b = binary.AppendVarint(b, int64(l.Count))
			b = binary.AppendVarint(b, int64(l.WindowSeconds))
		}
	}
	if e := c.Expire; e != nil {
		b = binary.AppendVarint(b, int64(e.Retention))
		b = binary.AppendVarint(b, int64(e.TombstoneRetention))
		b = binary.AppendVarint(b, int64(e.MaxItems))
	}
	if m := c.Member; m != nil {
		b = appendStr(b, m.ID)
		b = appendStr(b, m.URL)
		b = appendBool(b, m.Remove)
	}
	return b, nil
}

// binarySafe reports whether every string of c is valid UTF-8, so that
// the binary form carries exactly what JSON would.
func (c *Command) binarySafe() bool {
	// The audit fields have no binary form: they ride only on rare admin
	// commands, whose JSON costs nothing, and a binary form of them would
	// need a new kind that nodes of log format 2 refuse.
	if c.Audit != nil || c.Origin != "" || c.ClusterVersion != 0 || c.Backfill != nil {
		return false
	}
	if !utf8.ValidString(string(c.Op)) || !utf8.ValidString(c.EntryID) {
		return false
	}
	if c.Post != nil {
		for _, s := range postStrings(c.Post) {
			if !utf8.ValidString(*s) {
				return false
			}
		}
	}
	if m := c.Member; m != nil && (!utf8.ValidString(m.ID) || !utf8.ValidString(m.URL)) {
		return false
	}
	return true
}

// binarySize is an upper bound of the binary form's length, so Encode
// allocates once.
func (c *Command) binarySize() int {
	const v = binary.MaxVarintLen64
	n := 2 + v + len(c.Op) + v + v + len(c.EntryID) + 1
	if c.Post != nil {
		for _, s := range postStrings(c.Post) {
			n += v + len(*s)
		}
		n++
	}
	if c.Settings != nil {
		n += 1 + 4*v
	}
	if c.Expire != nil {
		n += 3 * v
	}
	if m := c.Member; m != nil {
		n += 2*v + len(m.ID) + len(m.URL) + 1
	}
	return n
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// DecodeCommand parses a log entry written by Encode of this or any
// earlier version: version 1 (JSON), version 2 (binary, or JSON after
// its kind byte) and the checksummed envelope around either (EncodeSummed).
// An envelope whose checksum does not match, or that is cut short before
// its inner command, returns a *CorruptError (File "raft.db"; the caller
// knows the index): the bytes were damaged after the leader wrote them,
// on this node only. Any other input — another version, a truncated entry,
// a length past the end, trailing bytes, a string that is not UTF-8 —
// returns an error, never a panic, and the same error on every node.
// Decoding a version 2 entry returns exactly the Command that decoding the
// version 1 (JSON) encoding of the same command returns.
func DecodeCommand(data []byte) (*Command, error) {
	if len(data) > 0 && data[0] == commandSummed {
		if err := VerifyCommand(data); err != nil {
			return nil, err
		}
		data = data[summedHeader:]
		if len(data) > 0 && data[0] == commandSummed {
			return nil, errors.New("fsm: unknown command format (an envelope inside an envelope)")
		}
	}
	return decodePlain(data)
}

// VerifyCommand checks the checksum of a log entry written by EncodeSummed
// without decoding it, and returns a *CorruptError (File "raft.db", Index
// 0) when it does not match or the envelope is cut short. An entry of
// another format carries no checksum: it returns nil. It costs one
// CRC-32C of the entry (hardware-accelerated), no allocation unless it
// fails.
func VerifyCommand(data []byte) error {
	if len(data) == 0 || data[0] != commandSummed {
		return nil
	}
	if len(data) < summedHeader+1 {
		return &CorruptError{File: logFile, Where: fmt.Sprintf("command envelope cut short at %d bytes", len(data))}
	}
	want := binary.BigEndian.Uint32(data[1:summedHeader])
	if got := Checksum(data[summedHeader:]); got != want {
		return &CorruptError{File: logFile, Where: "command", Want: want, Got: got}
	}
	return nil
}

// decodePlain decodes a version 1 or 2 command.
func decodePlain(data []byte) (*Command, error) {
	if len(data) == 0 {
		return nil, errors.New("fsm: unknown command format (empty entry)")
	}
	switch data[0] {
	case commandV1:
		return decodeJSON(data[1:])
	case commandV2:
		if len(data) < 2 {
			return nil, errors.New("fsm: decode command: truncated")
		}
		switch data[1] {
		case kindBinary:
			return decodeBinary(data[2:])
		case kindJSON:
			return decodeJSON(data[2:])
		}
		return nil, fmt.Errorf("fsm: unknown command kind %d", data[1])
	}
	return nil, fmt.Errorf("fsm: unknown command format %d", data[0])
}

func decodeJSON(b []byte) (*Command, error) {
	var c Command
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("fsm: decode command: %w", err)
	}
	return &c, nil
}

// postCommand puts a post's Command and PostCommand in one allocation:
// posts are nearly every command.
type postCommand struct {
	c Command
	p PostCommand
}

func decodeBinary(b []byte) (*Command, error) {
	r := reader{b: b, s: string(b)}
	op := Op(r.str())
	t := r.varint()
	entryID := r.str()
	parts := r.byte()
	if parts&^partsKnown != 0 {
		r.fail("unknown parts")
	}
	var c *Command
	if parts&partPost != 0 {
		pc := new(postCommand)
		c = &pc.c
		c.Post = &pc.p
		for _, s := range postStrings(c.Post) {
			*s = r.str()
		}
		c.Post.ByOperator = r.bool()
	} else {
		c = new(Command)
	}
	c.Op, c.Time, c.EntryID = op, t, entryID
	if parts&partSettings != 0 {
		s := new(SettingsCommand)
		flags := r.byte()
		if flags&^settingsKnown != 0 || flags&(setWritesDisabled|valWritesDisabled) == valWritesDisabled {
			r.fail("bad settings flags")
		}
		if flags&setWritesDisabled != 0 {
			w := flags&valWritesDisabled != 0
			s.Patch.WritesDisabled = &w
		}
		if flags&setPerSource != 0 {
			s.Patch.PerSourceLimit = r.limit()
		}
		if flags&setGlobal != 0 {
			s.Patch.GlobalLimit = r.limit()
		}
		s.FromConfig = flags&valFromConfig != 0
		c.Settings = s
	}
	if parts&partExpire != 0 {
		e := new(ExpireCommand)
		e.Retention = time.Duration(r.varint())
		e.TombstoneRetention = time.Duration(r.varint())
		e.MaxItems = r.int()
		c.Expire = e
	}
	if parts&partMember != 0 {
		m := new(MemberCommand)
		m.ID = r.str()
		m.URL = r.str()
		m.Remove = r.bool()
		c.Member = m
	}
	if r.err == nil && r.off != len(b) {
		r.fail("trailing bytes")
	}
	if r.err != nil {
		return nil, r.err
	}
	return c, nil
}

// reader reads the binary form. The first failure sticks and every later
// read returns a zero value, so decodeBinary checks once at the end.
type reader struct {
	b []byte
	// s holds the same bytes as b: every decoded string is a slice of it,
	// which costs one copy per command instead of one per field.
	s   string
	off int
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("fsm: decode command: %s at byte %d", what, r.off+2)
	}
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.fail("bad or truncated varint")
		return 0
	}
	r.off += n
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		r.fail("bad or truncated varint")
		return 0
	}
	r.off += n
	return v
}

// int reads a varint into an int, refusing what an int cannot hold (on a
// 32-bit platform) rather than silently truncating it.
func (r *reader) int() int {
	v := r.varint()
	if int64(int(v)) != v {
		r.fail("integer out of range")
		return 0
	}
	return int(v)
}

func (r *reader) limit() *restarea.Limit {
	var l restarea.Limit
	l.Count = r.int()
	l.WindowSeconds = r.int()
	return &l
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail("truncated")
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

func (r *reader) bool() bool {
	switch r.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	r.fail("bad bool")
	return false
}

// str reads a length-prefixed string. The length is checked against what
// is left before it is used, so a huge length cannot allocate or panic.
// Invalid UTF-8 is refused: Encode never writes it in the binary form.
func (r *reader) str() string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)-r.off) {
		r.fail("string past the end")
		return ""
	}
	s := r.s[r.off : r.off+int(n)]
	if !utf8.ValidString(s) {
		r.fail("string not UTF-8")
		return ""
	}
	r.off += int(n)
	return s
}
