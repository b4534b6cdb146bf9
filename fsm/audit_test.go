package fsm_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// auditTrail walks the whole audit trail, newest first, in pages of size.
func auditTrail(t testing.TB, f *fsm.FSM, size int) []restarea.AuditRecord {
	t.Helper()
	var all []restarea.AuditRecord
	cursor := ""
	for {
		p, err := f.Audit(cursor, size)
		if err != nil {
			t.Fatalf("audit: %v", err)
		}
		all = append(all, p.Records...)
		if p.NextCursor == nil {
			return all
		}
		cursor = *p.NextCursor
	}
}

// auditHarness is a harness whose state machine audits (log format 3).
func auditHarness(t *testing.T) *harness {
	h := newHarness(t)
	if r := h.apply(fsm.Command{Op: fsm.OpEnableLogV3}); r.Err != nil {
		t.Fatalf("enable log v3: %+v", r.Err)
	}
	if got := h.f.LogFormat(); got != 3 {
		t.Fatalf("LogFormat = %d, want 3", got)
	}
	return h
}

func changes(kv ...any) []restarea.AuditChange {
	var out []restarea.AuditChange
	for i := 0; i < len(kv); i += 3 {
		raw := func(v any) json.RawMessage {
			b, _ := json.Marshal(v)
			return b
		}
		out = append(out, restarea.AuditChange{Field: kv[i].(string), Before: raw(kv[i+1]), After: raw(kv[i+2])})
	}
	return out
}

// Every action that changes something writes exactly one record, in the
// command's transaction, with the command's index, time and origin; a
// command that changes nothing, or is refused, writes none.
func TestAuditRecordsEachAction(t *testing.T) {
	h := auditHarness(t)
	q := h.create(question(t, "audited"))
	r := h.create(reply(t, q, "an answer"))
	const src = "198.51.100.4"
	limit := restarea.Limit{Count: 7, WindowSeconds: 70}
	defaults := restarea.DefaultSettings()

	for _, c := range []struct {
		name string
		cmd  fsm.Command
		want *restarea.AuditRecord // nil: no record
	}{
		{"hide", fsm.Command{Op: fsm.OpHide, EntryID: q, Origin: src},
			&restarea.AuditRecord{Action: restarea.AuditHide, EntryID: q, EntryType: "question", Source: src,
				Changes: changes("visible", true, false)}},
		{"hide again", fsm.Command{Op: fsm.OpHide, EntryID: q, Origin: src}, nil},
		{"unhide", fsm.Command{Op: fsm.OpUnhide, EntryID: q},
			&restarea.AuditRecord{Action: restarea.AuditUnhide, EntryID: q, EntryType: "question",
				Changes: changes("visible", false, true)}},
		{"unhide again", fsm.Command{Op: fsm.OpUnhide, EntryID: q}, nil},
		{"hide unknown", fsm.Command{Op: fsm.OpHide, EntryID: "00000000-0000-7000-8000-000000000000"}, nil},
		{"delete", fsm.Command{Op: fsm.OpDelete, EntryID: r, Origin: src},
			&restarea.AuditRecord{Action: restarea.AuditDelete, EntryID: r, EntryType: "reply", Source: src,
				Changes: changes("deleted", false, true, "visible", true, false)}},
		{"delete again", fsm.Command{Op: fsm.OpDelete, EntryID: r}, nil},
		{"settings", fsm.Command{Op: fsm.OpSettings, Origin: src, Settings: &fsm.SettingsCommand{
			Patch: restarea.SettingsPatch{WritesDisabled: ptr(true), PerSourceLimit: &limit}}},
			&restarea.AuditRecord{Action: restarea.AuditSettings, Source: src,
				Changes: changes("writes_disabled", false, true, "per_source_limit", defaults.PerSourceLimit, limit)}},
		{"same settings", fsm.Command{Op: fsm.OpSettings, Settings: &fsm.SettingsCommand{
			Patch: restarea.SettingsPatch{WritesDisabled: ptr(true), PerSourceLimit: &limit}}}, nil},
		{"invalid settings", fsm.Command{Op: fsm.OpSettings, Settings: &fsm.SettingsCommand{
			Patch: restarea.SettingsPatch{GlobalLimit: &restarea.Limit{}}}}, nil},
		{"configured limits", fsm.Command{Op: fsm.OpConfigure, Settings: &fsm.SettingsCommand{FromConfig: true,
			Patch: restarea.SettingsPatch{PerSourceLimit: &restarea.Limit{Count: 1, WindowSeconds: 1}, GlobalLimit: &limit}}},
			&restarea.AuditRecord{Action: restarea.AuditSettings, FromConfig: true,
				Changes: changes("global_limit", defaults.GlobalLimit, limit)}},
		{"member add", fsm.Command{Op: fsm.OpMember, Member: &fsm.MemberCommand{MemberInfo: fsm.MemberInfo{ID: "n2", URL: "http://a"}}},
			&restarea.AuditRecord{Action: restarea.AuditMemberAdd, MemberID: "n2", Changes: changes("url", nil, "http://a")}},
		{"member same url", fsm.Command{Op: fsm.OpMember, Member: &fsm.MemberCommand{MemberInfo: fsm.MemberInfo{ID: "n2", URL: "http://a"}}}, nil},
		{"member new url", fsm.Command{Op: fsm.OpMember, Member: &fsm.MemberCommand{MemberInfo: fsm.MemberInfo{ID: "n2", URL: "http://b"}}},
			&restarea.AuditRecord{Action: restarea.AuditMemberUpdate, MemberID: "n2", Changes: changes("url", "http://a", "http://b")}},
		{"member remove", fsm.Command{Op: fsm.OpMember, Origin: src, Member: &fsm.MemberCommand{MemberInfo: fsm.MemberInfo{ID: "n2"}, Remove: true}},
			&restarea.AuditRecord{Action: restarea.AuditMemberRemove, MemberID: "n2", Source: src, Changes: changes("url", "http://b", nil)}},
		{"member remove again", fsm.Command{Op: fsm.OpMember, Member: &fsm.MemberCommand{MemberInfo: fsm.MemberInfo{ID: "n2"}, Remove: true}}, nil},
		{"leadership transfer", fsm.Command{Op: fsm.OpAudit, Origin: src, Audit: &fsm.AuditCommand{
			Action: restarea.AuditLeadershipTransfer, MemberID: "n3", From: "n1"}},
			&restarea.AuditRecord{Action: restarea.AuditLeadershipTransfer, MemberID: "n3", Source: src, Changes: changes("leader", "n1", "n3")}},
		{"transfer to an unknown leader", fsm.Command{Op: fsm.OpAudit, Audit: &fsm.AuditCommand{
			Action: restarea.AuditLeadershipTransfer, From: "n3"}},
			&restarea.AuditRecord{Action: restarea.AuditLeadershipTransfer, Changes: changes("leader", "n3", nil)}},
		{"audit command for another action", fsm.Command{Op: fsm.OpAudit, Audit: &fsm.AuditCommand{Action: restarea.AuditHide}}, nil},
		{"audit command without audit", fsm.Command{Op: fsm.OpAudit}, nil},
		{"a post", postCmd(question(t, "not an operator action"), "10.0.0.1", "a"), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := auditTrail(t, h.f, 200)
			h.advance(time.Second)
			res := h.apply(c.cmd)
			after := auditTrail(t, h.f, 200)
			if c.want == nil {
				if len(after) != len(before) || res.Audit != nil {
					t.Fatalf("no record wanted; trail grew %d → %d, result %+v", len(before), len(after), res.Audit)
				}
				return
			}
			if len(after) != len(before)+1 {
				t.Fatalf("trail grew %d → %d, want one record (result error %+v)", len(before), len(after), res.Err)
			}
			want := *c.want
			want.Seq = h.index
			want.Time = time.Unix(0, h.now).UTC()
			if !reflect.DeepEqual(after[0], want) {
				t.Fatalf("record\n got %+v\nwant %+v", after[0], want)
			}
			if res.Audit == nil || !reflect.DeepEqual(*res.Audit, want) {
				t.Fatalf("result's record %+v, want %+v", res.Audit, want)
			}
		})
	}
}

// Before log format 3 nothing is audited, so a log written by a binary
// that had no audit trail replays exactly as it was first applied.
func TestAuditOffBeforeFormat3(t *testing.T) {
	h := newHarness(t)
	q := h.create(question(t, "old log"))
	h.admin(fsm.OpHide, q)
	h.mustSettings(restarea.SettingsPatch{WritesDisabled: ptr(true)})
	h.apply(fsm.Command{Op: fsm.OpMember, Member: &fsm.MemberCommand{MemberInfo: fsm.MemberInfo{ID: "n1", URL: "http://a"}}})
	r := h.apply(fsm.Command{Op: fsm.OpAudit, Audit: &fsm.AuditCommand{Action: restarea.AuditLeadershipTransfer, MemberID: "n1"}})
	if r.Err == nil {
		t.Fatalf("an audit command before format 3 was accepted")
	}
	if trail := auditTrail(t, h.f, 50); len(trail) != 0 {
		t.Fatalf("audit trail before format 3: %+v", trail)
	}
	// From the switch on, actions are audited.
	h.apply(fsm.Command{Op: fsm.OpEnableLogV3})
	h.admin(fsm.OpUnhide, q)
	if trail := auditTrail(t, h.f, 50); len(trail) != 1 || trail[0].Action != restarea.AuditUnhide {
		t.Fatalf("audit trail after the switch: %+v", trail)
	}
}

// Records expire with the entries' retention, oldest first, at most
// MaxItems per expire command; TombstoneRetention does not touch them.
func TestAuditExpiresWithRetention(t *testing.T) {
	h := auditHarness(t)
	for i := 1; i <= 5; i++ {
		h.mustSettings(restarea.SettingsPatch{PerSourceLimit: &restarea.Limit{Count: i, WindowSeconds: 60}})
	}
	h.advance(10 * day)
	for i := 1; i <= 2; i++ {
		h.mustSettings(restarea.SettingsPatch{GlobalLimit: &restarea.Limit{Count: i, WindowSeconds: 60}})
	}
	if n := len(auditTrail(t, h.f, 50)); n != 7 {
		t.Fatalf("trail has %d records, want 7", n)
	}
	if r := h.expire(0, time.Hour, 10); r.Expired != 0 || len(auditTrail(t, h.f, 50)) != 7 {
		t.Fatalf("tombstone retention expired %d audit records", r.Expired)
	}
	for _, want := range []struct{ expired, left int }{{2, 5}, {2, 3}, {1, 2}, {0, 2}} {
		r := h.expire(5*day, 0, 2)
		trail := auditTrail(t, h.f, 50)
		if r.Expired != want.expired || len(trail) != want.left {
			t.Fatalf("expired %d leaving %d, want %d leaving %d", r.Expired, len(trail), want.expired, want.left)
		}
	}
	for _, rec := range auditTrail(t, h.f, 50) {
		if rec.Changes[0].Field != "global_limit" {
			t.Fatalf("a young record expired, an old one is left: %+v", rec)
		}
	}
}

// Pages are newest first, never skip or repeat a record while records are
// added or expired, and refuse bad cursors and limits.
func TestAuditPaging(t *testing.T) {
	h := auditHarness(t)
	q := h.create(question(t, "paged"))
	for i := 0; i < 6; i++ {
		h.admin(fsm.OpHide, q)
		h.admin(fsm.OpUnhide, q)
	}
	p, err := h.f.Audit("", 5)
	if err != nil || len(p.Records) != 5 || p.NextCursor == nil {
		t.Fatalf("first page: %d records, cursor %v, err %v", len(p.Records), p.NextCursor, err)
	}
	h.admin(fsm.OpHide, q) // newer than the first page: not in later pages
	var seqs []uint64
	for _, r := range p.Records {
		seqs = append(seqs, r.Seq)
	}
	for cursor := p.NextCursor; cursor != nil; {
		p, err = h.f.Audit(*cursor, 5)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Records {
			seqs = append(seqs, r.Seq)
		}
		cursor = p.NextCursor
	}
	if len(seqs) != 12 {
		t.Fatalf("walked %d records, want 12: %v", len(seqs), seqs)
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] >= seqs[i-1] {
			t.Fatalf("not newest first: %v", seqs)
		}
	}
	for _, bad := range []struct {
		cursor string
		limit  int
	}{{"", -1}, {"", 201}, {"not-a-cursor", 5}, {"AAAA", 5}} {
		if _, err := h.f.Audit(bad.cursor, bad.limit); restarea.ErrorCode(err) != restarea.CodeInvalidRequest {
			t.Errorf("Audit(%q, %d): %v, want invalid_request", bad.cursor, bad.limit, err)
		}
	}
	if p, err := h.f.Audit("", 0); err != nil || len(p.Records) != 13 || p.NextCursor != nil {
		t.Fatalf("default limit: %d records, cursor %v, err %v", len(p.Records), p.NextCursor, err)
	}
	// Cursors past either end (a record that expired meanwhile, say).
	past := base64.RawURLEncoding.EncodeToString([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	if p, err := h.f.Audit(past, 50); err != nil || len(p.Records) != 13 {
		t.Fatalf("cursor after the newest: %d records, err %v", len(p.Records), err)
	}
	before := base64.RawURLEncoding.EncodeToString(make([]byte, 8))
	if p, err := h.f.Audit(before, 50); err != nil || len(p.Records) != 0 || p.NextCursor != nil {
		t.Fatalf("cursor before the oldest: %d records, err %v", len(p.Records), err)
	}
}

// A snapshot carries the audit trail, and a restored node keeps auditing
// with the same sequence numbers as the others.
func TestAuditSnapshotRestore(t *testing.T) {
	h := auditHarness(t)
	populate(t, h)
	want := auditTrail(t, h.f, 200)
	if len(want) != 3 {
		t.Fatalf("populate audited %d actions, want 3 (hide, delete, settings)", len(want))
	}
	g := newHarness(t)
	if err := g.f.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, h.f)))); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if got := auditTrail(t, g.f, 2); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored trail\n got %+v\nwant %+v", got, want)
	}
	if g.f.LogFormat() != 3 {
		t.Fatalf("restored LogFormat = %d, want 3", g.f.LogFormat())
	}
	// The same next command audits the same on both.
	data := h.encode(fsm.Command{Op: fsm.OpSettings, Origin: "192.0.2.1", Settings: &fsm.SettingsCommand{
		Patch: restarea.SettingsPatch{WritesDisabled: ptr(true)}}})
	l := &raft.Log{Index: h.index + 1, Type: raft.LogCommand, Data: data}
	h.f.Apply(l)
	g.f.Apply(l)
	if d1, d2 := dump(t, h.f), dump(t, g.f); d1 != d2 {
		t.Fatalf("states differ after the same command:\n%s\n%s", d1, d2)
	}
}

// The audit fields travel in either log format, as JSON, and decode to
// the same command.
func TestAuditCommandEncoding(t *testing.T) {
	c := &fsm.Command{Op: fsm.OpAudit, Time: 42, Origin: "192.0.2.9",
		Audit: &fsm.AuditCommand{Action: restarea.AuditLeadershipTransfer, MemberID: "n2", From: "n1"}}
	v1, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	v2, err := c.EncodeV2()
	if err != nil {
		t.Fatal(err)
	}
	if v2[0] != 2 || v2[1] != 1 {
		t.Fatalf("EncodeV2 wrote version %d kind %d, want 2 and 1 (JSON)", v2[0], v2[1])
	}
	for _, data := range [][]byte{v1, v2} {
		got, err := fsm.DecodeCommand(data)
		if err != nil || !reflect.DeepEqual(got, c) {
			t.Fatalf("decoded %+v (%v), want %+v", got, err, c)
		}
	}
	// A hide without an origin keeps the compact binary form.
	b, _ := (&fsm.Command{Op: fsm.OpHide, EntryID: "x"}).EncodeV2()
	if b[1] != 0 {
		t.Fatalf("a hide without audit fields was written as kind %d, want 0", b[1])
	}
}
