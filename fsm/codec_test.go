package fsm_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// encodeV1 is how a version 1 binary encoded c: still on disk in old logs.
func encodeV1(t testing.TB, c *fsm.Command) []byte {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte{1}, b...)
}

func mustEncode(t testing.TB, c *fsm.Command) []byte {
	t.Helper()
	b, err := c.EncodeV2()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustDecode(t testing.TB, b []byte) *fsm.Command {
	t.Helper()
	c, err := fsm.DecodeCommand(b)
	if err != nil {
		t.Fatalf("decode %x: %v", b, err)
	}
	return c
}

var allOps = []fsm.Op{fsm.OpPost, fsm.OpHide, fsm.OpUnhide, fsm.OpDelete, fsm.OpSettings, fsm.OpConfigure, fsm.OpExpire, fsm.OpMember, fsm.OpAudit, fsm.OpEnableLogV2, fsm.OpEnableLogV3, fsm.OpClusterVersion, fsm.OpBackfill}

// cmdGen makes random commands. It fills every exported field by
// reflection, so a field added to Command or to a type it carries is
// exercised (and, if the binary form forgets it, caught) without editing
// the generator.
type cmdGen struct {
	t       testing.TB
	rng     *rand.Rand
	invalid bool // allow strings that are not valid UTF-8
}

var tricky = []string{
	"", "a", "question", "ü", "日本語", "😀", "<b>&amp;</b>", "line\u2028sep\u2029", "\x00\x01\x1f\x7f",
	"quote\"back\\slash", "tab\tnew\nline\rret", "\ufffd", "0192d6a4-7b8e-7c3e-9f00-0a1b2c3d4e5f",
}

func (g *cmdGen) str() string {
	switch g.rng.Intn(6) {
	case 0, 1:
		return tricky[g.rng.Intn(len(tricky))]
	case 2: // long, mixed-width runes
		var sb strings.Builder
		runes := []rune("aZ9 é日😀\n<\"\u2028")
		for n := g.rng.Intn(1000); n > 0; n-- {
			sb.WriteRune(runes[g.rng.Intn(len(runes))])
		}
		return sb.String()
	case 3:
		if g.invalid {
			b := make([]byte, g.rng.Intn(20))
			g.rng.Read(b)
			return string(b)
		}
	}
	return fmt.Sprintf("s%d", g.rng.Int63n(1e6))
}

func (g *cmdGen) int64() int64 {
	switch g.rng.Intn(5) {
	case 0:
		return 0
	case 1:
		return []int64{math.MinInt64, math.MaxInt64, -1, 1, 127, 128, -129}[g.rng.Intn(7)]
	case 2:
		return -g.rng.Int63()
	}
	return g.rng.Int63()
}

func (g *cmdGen) fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(g.str())
	case reflect.Bool:
		v.SetBool(g.rng.Intn(2) == 0)
	case reflect.Int, reflect.Int64:
		v.SetInt(g.int64())
	case reflect.Pointer:
		if g.rng.Intn(3) == 0 {
			v.SetZero()
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		g.fill(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				g.fill(v.Field(i))
			}
		}
	default:
		g.t.Fatalf("cmdGen cannot fill a %s (%s): teach it, and the binary command form", v.Kind(), v.Type())
	}
}

// command returns a random command: a known op with its usual part, or
// anything at all (other parts, an unknown op) — the codec must carry
// every value, not only meaningful ones.
func (g *cmdGen) command() *fsm.Command {
	var c fsm.Command
	g.fill(reflect.ValueOf(&c).Elem())
	if g.rng.Intn(8) > 0 {
		c.Op = allOps[g.rng.Intn(len(allOps))]
	}
	if g.rng.Intn(4) > 0 {
		// The audit fields (format 3) and a backfill's bound ride on few
		// commands, always as JSON.
		c.Audit, c.Origin, c.ClusterVersion, c.Backfill = nil, "", 0, nil
	}
	if g.rng.Intn(2) == 0 { // the typical shape: one part, the op's
		c.Post, c.Settings, c.Expire, c.Member, c.Audit, c.Backfill = nil, nil, nil, nil, nil, nil
		if c.Op != fsm.OpClusterVersion {
			c.ClusterVersion = 0
		}
		full := fsm.Command{}
		g.fill(reflect.ValueOf(&full).Elem())
		switch c.Op {
		case fsm.OpPost:
			c.Post = cmp(full.Post, &fsm.PostCommand{})
		case fsm.OpSettings, fsm.OpConfigure:
			c.Settings = cmp(full.Settings, &fsm.SettingsCommand{})
		case fsm.OpExpire:
			c.Expire = cmp(full.Expire, &fsm.ExpireCommand{})
		case fsm.OpMember:
			c.Member = cmp(full.Member, &fsm.MemberCommand{})
		case fsm.OpAudit:
			c.Audit = cmp(full.Audit, &fsm.AuditCommand{})
		case fsm.OpBackfill:
			c.Backfill = cmp(full.Backfill, &fsm.BackfillCommand{})
		}
	}
	return &c
}

func cmp[T any](v, fallback *T) *T {
	if v == nil {
		return fallback
	}
	return v
}

// The binary form decodes to exactly the command, and to exactly what the
// JSON (version 1) form decodes to, for every op and every field.
func TestCodecMatchesJSON(t *testing.T) {
	for _, invalid := range []bool{false, true} {
		g := &cmdGen{t: t, rng: rand.New(rand.NewSource(1)), invalid: invalid}
		kinds := map[byte]int{}
		for range 1500 {
			c := g.command()
			data := mustEncode(t, c)
			if data[0] != 2 {
				t.Fatalf("EncodeV2 wrote version %d, want 2", data[0])
			}
			audited := c.Audit != nil || c.Origin != "" || c.ClusterVersion != 0 || c.Backfill != nil
			if audited && data[1] != 1 {
				t.Fatalf("a command with audit fields, a cluster version or a backfill was written as kind %d, want 1 (JSON)", data[1])
			}
			if !audited {
				kinds[data[1]]++
			}
			got := mustDecode(t, data)
			want := mustDecode(t, encodeV1(t, c))
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("binary and JSON decode differ:\n got %#v\nwant %#v", got, want)
			}
			if data[1] == 0 && !reflect.DeepEqual(got, c) {
				t.Fatalf("binary round trip changed the command:\n got %#v\nwant %#v", got, c)
			}
		}
		if kinds[0] == 0 || (invalid && kinds[1] == 0) || (!invalid && kinds[1] != 0) {
			t.Fatalf("invalid=%v: kinds written %v", invalid, kinds)
		}
	}
}

// Nil and empty stay apart: a present but zero part, a *bool false, a
// zero limit.
func TestCodecNilVersusEmpty(t *testing.T) {
	f, z := false, restarea.Limit{}
	for _, c := range []*fsm.Command{
		{},
		{Op: fsm.OpPost, Post: &fsm.PostCommand{}},
		{Op: fsm.OpSettings, Settings: &fsm.SettingsCommand{}},
		{Op: fsm.OpSettings, Settings: &fsm.SettingsCommand{Patch: restarea.SettingsPatch{WritesDisabled: &f, GlobalLimit: &z}}},
		{Op: fsm.OpExpire, Expire: &fsm.ExpireCommand{}},
		{Op: fsm.OpMember, Member: &fsm.MemberCommand{}},
	} {
		got := mustDecode(t, mustEncode(t, c))
		if !reflect.DeepEqual(got, c) || !reflect.DeepEqual(got, mustDecode(t, encodeV1(t, c))) {
			t.Errorf("round trip of %#v gave %#v", c, got)
		}
	}
}

// Entries written by version 1 binaries stay readable: these bytes are a
// version 1 encoding, as found in existing logs and snapshots.
func TestDecodeCommandVersion1(t *testing.T) {
	data := append([]byte{1}, `{"op":"post","time":1735689600000000000,"post":{"request":{"request_id":"7d444840-9dc0-11d1-b245-5ffdce74fad2","type":"reply","parent_id":"0192d6a4-7b8e-7c3e-9f00-0a1b2c3d4e5f","title":"t","body":"b \u003c \u2028","actor":{"name":"agent","model":"m1","trigger":"cron"},"submission_mode":"autonomous"},"source":"10.0.0.1","channel":"mcp","attempt_id":"att","new_id":"0192d6a4-7b8e-7c3e-9f00-000000000001","by_operator":true}}`...)
	want := &fsm.Command{Op: fsm.OpPost, Time: 1735689600000000000, Post: &fsm.PostCommand{
		Request: restarea.PostRequest{
			RequestID: "7d444840-9dc0-11d1-b245-5ffdce74fad2", Type: "reply",
			ParentID: "0192d6a4-7b8e-7c3e-9f00-0a1b2c3d4e5f", Title: "t", Body: "b < \u2028",
			Actor: restarea.Actor{Name: "agent", Model: "m1", Trigger: "cron"}, SubmissionMode: "autonomous",
		},
		Source: "10.0.0.1", Channel: restarea.ChannelMCP, AttemptID: "att",
		NewID: "0192d6a4-7b8e-7c3e-9f00-000000000001", ByOperator: true,
	}}
	if got := mustDecode(t, data); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
	if got := mustDecode(t, mustEncode(t, want)); !reflect.DeepEqual(got, want) {
		t.Fatalf("version 2 round trip: got %#v", got)
	}

	settings := append([]byte{1}, `{"op":"configure","time":5,"settings":{"patch":{"writes_disabled":false,"global_limit":{"count":10,"window_seconds":60}},"from_config":true}}`...)
	f := false
	wantS := &fsm.Command{Op: fsm.OpConfigure, Time: 5, Settings: &fsm.SettingsCommand{
		Patch: restarea.SettingsPatch{WritesDisabled: &f, GlobalLimit: &restarea.Limit{Count: 10, WindowSeconds: 60}}, FromConfig: true,
	}}
	if got := mustDecode(t, settings); !reflect.DeepEqual(got, wantS) {
		t.Fatalf("got %#v\nwant %#v", got, wantS)
	}
}

// The version 2 bytes are pinned: a change to the binary form must be a
// new version or kind, never a silent reinterpretation of logs on disk.
func TestEncodeVersion2Golden(t *testing.T) {
	f := true
	for _, tc := range []struct {
		c   *fsm.Command
		hex string
	}{
		{&fsm.Command{Op: fsm.OpPost, Time: 1735689600000000000, Post: &fsm.PostCommand{
			Request: restarea.PostRequest{RequestID: "r", Type: "question", Title: "T", Body: "B",
				Actor: restarea.Actor{Name: "a", Model: "m"}, SubmissionMode: "manual"},
			Source: "10.0.0.1", Channel: restarea.ChannelHTTP, AttemptID: "x", NewID: "n",
		}}, "0200" + "04706f7374" + "8080b885d89fb49630" + "00" + "01" +
			"0172" + "087175657374696f6e" + "00" + "0154" + "0142" + "0161" + "016d" + "00" + "066d616e75616c" +
			"0831302e302e302e31" + "0468747470" + "0178" + "016e" + "00"},
		{&fsm.Command{Op: fsm.OpSettings, Time: -1, Settings: &fsm.SettingsCommand{Patch: restarea.SettingsPatch{
			WritesDisabled: &f, PerSourceLimit: &restarea.Limit{Count: 3, WindowSeconds: 60}}}},
			"0200" + "0873657474696e6773" + "01" + "00" + "02" + "07" + "06" + "78"},
		{&fsm.Command{Op: fsm.OpExpire, Expire: &fsm.ExpireCommand{Retention: time.Second, TombstoneRetention: 1, MaxItems: 100}},
			"0200" + "06657870697265" + "00" + "00" + "04" + "80a8d6b907" + "02" + "c801"},
		{&fsm.Command{Op: fsm.OpMember, Member: &fsm.MemberCommand{MemberInfo: fsm.MemberInfo{ID: "n1", URL: "u"}, Remove: true}},
			"0200" + "066d656d626572" + "00" + "00" + "08" + "026e31" + "0175" + "01"},
		{&fsm.Command{Op: fsm.OpHide, Time: 1, EntryID: "e"}, "0200" + "0468696465" + "02" + "0165" + "00"},
	} {
		data := mustEncode(t, tc.c)
		if got := hex.EncodeToString(data); got != tc.hex {
			t.Errorf("%s: EncodeV2 = %s, want %s", tc.c.Op, got, tc.hex)
		}
		want, _ := hex.DecodeString(tc.hex)
		if got := mustDecode(t, want); !reflect.DeepEqual(got, tc.c) {
			t.Errorf("%s: decoded %#v", tc.c.Op, got)
		}
	}
}

func TestDecodeCommandRejects(t *testing.T) {
	valid := mustEncode(t, &fsm.Command{Op: fsm.OpPost, Time: 42, Post: &fsm.PostCommand{
		Request: restarea.PostRequest{RequestID: "r", Body: "b"}, NewID: "n", ByOperator: true}})
	bad := map[string][]byte{
		"empty":           nil,
		"version 0":       {0},
		"version 4":       {4, 0},
		"version 255":     append([]byte{255}, valid[1:]...),
		"no kind":         {2},
		"unknown kind":    {2, 2},
		"v1 not json":     {1, 'x'},
		"v2 json broken":  {2, 1, '{'},
		"huge length":     {2, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"length past end": {2, 0, 5, 'p', 'o'},
		"varint overflow": {2, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"unknown part":    {2, 0, 0, 0, 0, 0x10},
		"settings flags":  {2, 0, 0, 0, 0, partsSettings, 0x02},
		"bad bool":        append(bytes.Clone(valid[:len(valid)-1]), 2),
		"trailing byte":   append(bytes.Clone(valid), 0),
		"not utf-8":       {2, 0, 1, 0xff, 0, 0, 0},
	}
	for cut := range len(valid) {
		bad[fmt.Sprintf("truncated to %d", cut)] = valid[:cut]
	}
	for name, data := range bad {
		if c, err := fsm.DecodeCommand(data); err == nil {
			t.Errorf("%s: decoded %#v, want an error", name, c)
		}
	}
	mustDecode(t, valid)
}

const partsSettings = 2

// TestCodecFieldInventory lists every field a Command carries. When it
// fails, a field was added or changed in Command or in the types it
// carries (restarea.PostRequest, Actor, SettingsPatch, Limit, ...): add it
// to the binary form in codec.go under a new version or kind, keep
// decoding the old ones, then update this list.
func TestCodecFieldInventory(t *testing.T) {
	var got []string
	var walk func(prefix string, ty reflect.Type)
	walk = func(prefix string, ty reflect.Type) {
		for i := range ty.NumField() {
			f := ty.Field(i)
			name, ft := prefix+f.Name, f.Type
			if ft.Kind() == reflect.Pointer {
				name, ft = name+"*", ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				walk(name+".", ft)
				continue
			}
			got = append(got, name+" "+ft.String())
		}
	}
	walk("", reflect.TypeOf(fsm.Command{}))
	want := []string{
		"Op fsm.Op", "Time int64",
		"Post*.Request.RequestID string", "Post*.Request.Type string", "Post*.Request.ParentID string",
		"Post*.Request.Title string", "Post*.Request.Body string", "Post*.Request.Actor.Name string",
		"Post*.Request.Actor.Model string", "Post*.Request.Actor.Trigger string",
		"Post*.Request.SubmissionMode string", "Post*.Source string", "Post*.Channel restarea.Channel",
		"Post*.AttemptID string", "Post*.NewID string", "Post*.ByOperator bool",
		"EntryID string",
		"Settings*.Patch.WritesDisabled* bool", "Settings*.Patch.PerSourceLimit*.Count int",
		"Settings*.Patch.PerSourceLimit*.WindowSeconds int", "Settings*.Patch.GlobalLimit*.Count int",
		"Settings*.Patch.GlobalLimit*.WindowSeconds int", "Settings*.FromConfig bool",
		"Expire*.Retention time.Duration", "Expire*.TombstoneRetention time.Duration", "Expire*.MaxItems int",
		"Member*.MemberInfo.ID string", "Member*.MemberInfo.URL string", "Member*.Remove bool",
		// Log format 3: written as JSON only (kind 1), never in the binary form.
		"Audit*.Action restarea.AuditAction", "Audit*.MemberID string", "Audit*.From string",
		// OpBackfill's bound (cluster version 4): written as JSON only.
		"Backfill*.MaxItems int",
		// OpClusterVersion's target: written as JSON only, like the audit fields.
		"ClusterVersion int",
		"Origin string",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the fields of Command changed; update the binary form in codec.go (see this test's comment).\n got %q\nwant %q", got, want)
	}
}

// FuzzDecodeCommand: no input panics, whatever decodes re-encodes (as
// version 2 and in the checksummed envelope) to something that decodes to
// the same command, and an envelope that fails its checksum is refused as
// damage (*CorruptError), whatever its other bytes.
func FuzzDecodeCommand(f *testing.F) {
	g := &cmdGen{t: f, rng: rand.New(rand.NewSource(2)), invalid: true}
	for range 40 {
		c := g.command()
		f.Add(mustEncode(f, c))
		f.Add(encodeV1(f, c))
		sealed := mustSeal(f, c)
		f.Add(sealed)
		sealed[len(sealed)/2] ^= 1
		f.Add(sealed)
	}
	f.Add([]byte{3})
	f.Add([]byte{3, 0, 0, 0, 0})
	f.Add([]byte{})
	f.Add([]byte{2, 0})
	f.Add([]byte{2, 1, '{', '}'})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := fsm.DecodeCommand(data)
		if verr := fsm.VerifyCommand(data); verr != nil && !errors.Is(err, fsm.ErrCorrupt) {
			t.Fatalf("VerifyCommand says %v, DecodeCommand %v", verr, err)
		}
		if err != nil {
			return
		}
		for _, b := range [][]byte{mustEncode(t, c), mustSeal(t, c)} {
			if again := mustDecode(t, b); !reflect.DeepEqual(again, c) {
				t.Fatalf("re-encoding changed the command:\n got %#v\nwant %#v", again, c)
			}
		}
	})
}

func BenchmarkDecodeCommand(b *testing.B) {
	c := postCmd(question(b, "a question of typical length for the benchmark"), "203.0.113.7", "attempt-0001")
	c.Time = t0
	c.Post.Request.Body = strings.Repeat("A body of a few hundred bytes, as agents write them. ", 8)
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"json-v1", encodeV1(b, &c)},
		{"binary-v2", mustEncode(b, &c)},
		{"summed-v2", mustSeal(b, &c)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.data)))
			for b.Loop() {
				if _, err := fsm.DecodeCommand(tc.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncodeCommand(b *testing.B) {
	c := postCmd(question(b, "a question of typical length for the benchmark"), "203.0.113.7", "attempt-0001")
	c.Time = t0
	c.Post.Request.Body = strings.Repeat("A body of a few hundred bytes, as agents write them. ", 8)
	b.Run("json-v1", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(&c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("binary-v2", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.EncodeV2(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestEncodeWritesVersion1 pins what Encode writes: version 1, which
// every version reads (leaders use EncodeV2 only after the cluster
// switched).
func TestEncodeWritesVersion1(t *testing.T) {
	c := &fsm.Command{Op: fsm.OpPost, Time: 42, Post: &fsm.PostCommand{
		Request: restarea.PostRequest{RequestID: "r", Type: "question", Title: "t", Body: "b"},
		Source:  "10.0.0.1", Channel: restarea.ChannelHTTP, AttemptID: "a", NewID: "n",
	}}
	data, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if data[0] != 1 || !bytes.Equal(data, encodeV1(t, c)) {
		t.Fatalf("Encode = %q, want version 1 JSON", data)
	}
	if got := mustDecode(t, data); !reflect.DeepEqual(got, c) {
		t.Fatalf("decoded %+v, want %+v", got, c)
	}
}
