package restarea_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
	"golang.org/x/text/unicode/norm"
)

const (
	testRequestID = "0f8fad5b-d9cb-469f-a165-70867728950e"
	testParentID  = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
)

// question returns a valid, already normalised question request with
// the fixed request_id.
func question() restarea.PostRequest {
	q := testkit.Question("How do I retry a post?")
	q.RequestID = testRequestID
	return q
}

// reply returns a valid, already normalised reply request.
func reply() restarea.PostRequest {
	r := question()
	r.Type = restarea.TypeReply
	r.ParentID = testParentID
	r.Title = ""
	r.SubmissionMode = restarea.ModeAssisted
	return r
}

// wantInvalid checks that err is an *Error with CodeInvalidRequest whose
// message starts with the field's name.
func wantInvalid(t *testing.T, err error, field string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want invalid_request naming %q", field)
	}
	var e *restarea.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *restarea.Error", err, err)
	}
	if e.Code != restarea.CodeInvalidRequest {
		t.Fatalf("code = %q, want %q (%v)", e.Code, restarea.CodeInvalidRequest, err)
	}
	if !strings.HasPrefix(e.Message, field+" ") {
		t.Fatalf("message %q does not name field %q first", e.Message, field)
	}
}

func TestNormalizeText(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"ascii unchanged", "hello", "hello"},
		{"decomposed e acute", "caf\u0065\u0301", "caf\u00e9"},
		{"composed e acute unchanged", "caf\u00e9", "caf\u00e9"},
		{"hangul jamo", "\u1100\u1161\u11a8", "\uac01"},                                       // ᄀ ᅡ ᆨ → 각
		{"hangul jamo without final", "\u1112\u1161\u11ab\u1100\u1173\u11af", "\ud55c\uae00"}, // 한글
		{"japanese dakuten", "\u304b\u3099", "\u304c"},                                        // か + ゙ → が
		{"japanese handakuten katakana", "\u30cf\u309a", "\u30d1"},                            // ハ + ゚ → パ
		{"crlf", "a\r\nb", "a\nb"},
		{"lone cr", "a\rb", "a\nb"},
		{"cr cr lf", "a\r\r\nb", "a\n\nb"},
		{"lf cr", "a\n\rb", "a\n\nb"},
		{"trailing cr", "a\r", "a\n"},
		{"only crlf", "\r\n", "\n"},
		{"no trimming", "  padded \t\n\n", "  padded \t\n\n"},
		{"leading and trailing newlines kept", "\r\n x \r\n", "\n x \n"},
		{"crlf next to combining mark", "e\r\n\u0301", "e\n\u0301"},
		{"compatibility forms kept (NFC, not NFKC)", "\ufb01 \u2460 \uff21", "\ufb01 \u2460 \uff21"},
		{"emoji unchanged", "\U0001F600", "\U0001F600"},
		{"nul kept", "a\x00b", "a\x00b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := restarea.NormalizeText(tt.in)
			if got != tt.want {
				t.Fatalf("NormalizeText(%+q) = %+q, want %+q", tt.in, got, tt.want)
			}
			if again := restarea.NormalizeText(got); again != got {
				t.Fatalf("not idempotent: %+q then %+q", got, again)
			}
			if !norm.NFC.IsNormalString(got) {
				t.Fatalf("result %+q is not NFC", got)
			}
		})
	}
}

func TestNormalizeIdempotentAndNormalising(t *testing.T) {
	in := question()
	in.RequestID = strings.ToUpper(testRequestID)
	in.Title = "Cafe\u0301 \u304b\u3099\r\n"
	in.Body = "line 1\r\nline 2\rline 3\n\u1100\u1161"
	in.Actor = restarea.Actor{Name: "Jose\u0301", Model: "m\r", Trigger: "\u30cf\u309a"}

	want := in
	want.RequestID = testRequestID
	want.Title = "Caf\u00e9 \u304c\n"
	want.Body = "line 1\nline 2\nline 3\n\uac00"
	want.Actor = restarea.Actor{Name: "Jos\u00e9", Model: "m\n", Trigger: "\u30d1"}

	got, err := in.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("Normalize:\n got %+v\nwant %+v", got, want)
	}
	again, err := got.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	if again != got {
		t.Fatalf("Normalize is not idempotent:\n once  %+v\n twice %+v", got, again)
	}
	// The receiver is a value: the caller's request is not changed.
	if in.RequestID != strings.ToUpper(testRequestID) || in.Title != "Cafe\u0301 \u304b\u3099\r\n" {
		t.Fatalf("Normalize changed its receiver: %+v", in)
	}
}

func TestNormalizeUUIDCase(t *testing.T) {
	tests := []struct {
		name     string
		req      func() restarea.PostRequest
		wantID   string
		wantPrnt string
	}{
		{"question lowercase", func() restarea.PostRequest { return question() }, testRequestID, ""},
		{"question uppercase request_id", func() restarea.PostRequest {
			r := question()
			r.RequestID = strings.ToUpper(testRequestID)
			return r
		}, testRequestID, ""},
		{"question mixed case request_id", func() restarea.PostRequest {
			r := question()
			r.RequestID = "0F8fAD5b-D9cB-469f-A165-70867728950E"
			return r
		}, testRequestID, ""},
		{"reply uppercase both", func() restarea.PostRequest {
			r := reply()
			r.RequestID = strings.ToUpper(testRequestID)
			r.ParentID = strings.ToUpper(testParentID)
			return r
		}, testRequestID, testParentID},
		{"reply mixed case parent_id", func() restarea.PostRequest {
			r := reply()
			r.ParentID = "7C9E6679-7425-40dE-944B-e07fc1f90ae7"
			return r
		}, testRequestID, testParentID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.req().Normalize()
			if err != nil {
				t.Fatal(err)
			}
			if got.RequestID != tt.wantID || got.ParentID != tt.wantPrnt {
				t.Fatalf("got request_id %q parent_id %q, want %q %q", got.RequestID, got.ParentID, tt.wantID, tt.wantPrnt)
			}
		})
	}
}

func TestValidUUID(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{testRequestID, true},
		{strings.ToUpper(testRequestID), true},
		{"00000000-0000-0000-0000-000000000000", true}, // a UUID, though not a request_id
		{"", false},
		{"0f8fad5bd9cb469fa16570867728950e", false},                    // no dashes
		{"{0f8fad5b-d9cb-469f-a165-70867728950e}", false},              // braces
		{"urn:uuid:0f8fad5b-d9cb-469f-a165-70867728950e", false},       // URN
		{"0f8fad5b-d9cb-469f-a165-70867728950", false},                 // short
		{"0f8fad5b-d9cb-469f-a165-70867728950e0", false},               // long
		{"0f8fad5b-d9cb-469f-a165-70867728950g", false},                // non-hex
		{"0f8fad5bd-9cb-469f-a165-70867728950e", false},                // dash moved
		{"0f8fad5b-d9cb-469f-a165_70867728950e", false},                // wrong separator
		{" 0f8fad5b-d9cb-469f-a165-70867728950", false},                // space
		{"0f8fad5b-d9cb-469f-a165-70867728950\u00e9"[:36], false},      // non-ASCII byte
		{"0f8fad5b-d9cb-469f-a165-7086772895\uff10\uff10"[:36], false}, // fullwidth digits
	}
	for _, tt := range tests {
		if got := restarea.ValidUUID(tt.in); got != tt.want {
			t.Errorf("ValidUUID(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestValidRequestID(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want bool
	}{
		{testRequestID, true},
		{strings.ToUpper(testRequestID), true},
		{"017f22e2-79b0-7cc3-98c4-dc0c0c07398f", true},
		{"00000000-0000-0000-0000-000000000000", false},
		{"00000000-0000-4000-8000-000000000000", true}, // version and variant set: a v4 UUID
		{"c232ab00-9414-11ec-b3c8-9f6bdeced846", false},
		{"0f8fad5b-d9cb-469f-a165-70867728950", false},
		{"0f8fad5b-d9cb-469f-f165-70867728950e", false},
		{"", false},
	} {
		if got := restarea.ValidRequestID(tt.in); got != tt.want {
			t.Errorf("ValidRequestID(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	_, err := restarea.PostRequest{RequestID: "00000000-0000-0000-0000-000000000000"}.Normalize()
	if msg := restarea.ErrorMessage(err); !strings.Contains(msg, "version 4") || !strings.Contains(msg, "7") || !strings.Contains(msg, "nil UUID") {
		t.Fatalf("message %q does not state the rule", msg)
	}
}

func TestNormalizeValidation(t *testing.T) {
	rep := func(s string, n int) string { return strings.Repeat(s, n) }
	tests := []struct {
		name  string
		base  func() restarea.PostRequest
		edit  func(*restarea.PostRequest)
		field string // "" means valid
	}{
		// request_id
		{"request_id missing", question, func(r *restarea.PostRequest) { r.RequestID = "" }, "request_id"},
		{"request_id not a uuid", question, func(r *restarea.PostRequest) { r.RequestID = "abc" }, "request_id"},
		{"request_id without dashes", question, func(r *restarea.PostRequest) { r.RequestID = strings.ReplaceAll(testRequestID, "-", "") }, "request_id"},
		{"request_id with braces", question, func(r *restarea.PostRequest) { r.RequestID = "{" + testRequestID + "}" }, "request_id"},
		{"request_id with space", question, func(r *restarea.PostRequest) { r.RequestID = testRequestID + " " }, "request_id"},
		{"request_id non-hex", question, func(r *restarea.PostRequest) { r.RequestID = "z" + testRequestID[1:] }, "request_id"},
		{"request_id uppercase", question, func(r *restarea.PostRequest) { r.RequestID = strings.ToUpper(testRequestID) }, ""},
		{"request_id nil uuid", question, func(r *restarea.PostRequest) { r.RequestID = "00000000-0000-0000-0000-000000000000" }, "request_id"},
		{"request_id max uuid", question, func(r *restarea.PostRequest) { r.RequestID = "ffffffff-ffff-ffff-ffff-ffffffffffff" }, "request_id"},
		{"request_id version 1", question, func(r *restarea.PostRequest) { r.RequestID = "c232ab00-9414-11ec-b3c8-9f6bdeced846" }, "request_id"},
		{"request_id version 3", question, func(r *restarea.PostRequest) { r.RequestID = "6fa459ea-ee8a-3ca4-894e-db77e160355e" }, "request_id"},
		{"request_id version 5", question, func(r *restarea.PostRequest) { r.RequestID = "886313e1-3b8a-5372-9b90-0c9aee199e5d" }, "request_id"},
		{"request_id version 6", question, func(r *restarea.PostRequest) { r.RequestID = "1ec9414c-232a-6b00-b3c8-9f6bdeced846" }, "request_id"},
		{"request_id version 8", question, func(r *restarea.PostRequest) { r.RequestID = "2489e9ad-2ee2-8e00-8ec9-32d5f69181c0" }, "request_id"},
		{"request_id hand-made ones", question, func(r *restarea.PostRequest) { r.RequestID = "11111111-1111-1111-1111-111111111111" }, "request_id"},
		{"request_id version 4 with NCS variant", question, func(r *restarea.PostRequest) { r.RequestID = "0f8fad5b-d9cb-469f-7165-70867728950e" }, "request_id"},
		{"request_id version 4 with Microsoft variant", question, func(r *restarea.PostRequest) { r.RequestID = "0f8fad5b-d9cb-469f-c165-70867728950e" }, "request_id"},
		{"request_id version 7", question, func(r *restarea.PostRequest) { r.RequestID = "017f22e2-79b0-7cc3-98c4-dc0c0c07398f" }, ""},
		{"request_id version 7 uppercase variant B", question, func(r *restarea.PostRequest) { r.RequestID = "017F22E2-79B0-7CC3-B8C4-DC0C0C07398F" }, ""},
		{"request_id version 4 variant 8", question, func(r *restarea.PostRequest) { r.RequestID = "0f8fad5b-d9cb-469f-8165-70867728950e" }, ""},

		// type
		{"type missing", question, func(r *restarea.PostRequest) { r.Type = "" }, "type"},
		{"type unknown", question, func(r *restarea.PostRequest) { r.Type = "thread" }, "type"},
		{"type wrong case", question, func(r *restarea.PostRequest) { r.Type = "Question" }, "type"},
		{"type padded", question, func(r *restarea.PostRequest) { r.Type = " reply" }, "type"},

		// submission_mode
		{"submission_mode missing", question, func(r *restarea.PostRequest) { r.SubmissionMode = "" }, "submission_mode"},
		{"submission_mode unknown", question, func(r *restarea.PostRequest) { r.SubmissionMode = "auto" }, "submission_mode"},
		{"submission_mode wrong case", question, func(r *restarea.PostRequest) { r.SubmissionMode = "Manual" }, "submission_mode"},
		{"submission_mode manual", question, func(r *restarea.PostRequest) { r.SubmissionMode = restarea.ModeManual }, ""},
		{"submission_mode assisted", question, func(r *restarea.PostRequest) { r.SubmissionMode = restarea.ModeAssisted }, ""},
		{"submission_mode autonomous", question, func(r *restarea.PostRequest) { r.SubmissionMode = restarea.ModeAutonomous }, ""},

		// question
		{"question with parent_id", question, func(r *restarea.PostRequest) { r.ParentID = testParentID }, "parent_id"},
		{"question with junk parent_id", question, func(r *restarea.PostRequest) { r.ParentID = "x" }, "parent_id"},
		{"question title missing", question, func(r *restarea.PostRequest) { r.Title = "" }, "title"},
		{"question title 1", question, func(r *restarea.PostRequest) { r.Title = "a" }, ""},
		{"question title 200", question, func(r *restarea.PostRequest) { r.Title = rep("a", 200) }, ""},
		{"question title 201", question, func(r *restarea.PostRequest) { r.Title = rep("a", 201) }, "title"},
		{"question title whitespace only is not trimmed", question, func(r *restarea.PostRequest) { r.Title = " " }, ""},

		// reply
		{"reply parent_id missing", reply, func(r *restarea.PostRequest) { r.ParentID = "" }, "parent_id"},
		{"reply parent_id not a uuid", reply, func(r *restarea.PostRequest) { r.ParentID = "not-a-uuid" }, "parent_id"},
		{"reply parent_id without dashes", reply, func(r *restarea.PostRequest) { r.ParentID = strings.ReplaceAll(testParentID, "-", "") }, "parent_id"},
		{"reply parent_id uppercase", reply, func(r *restarea.PostRequest) { r.ParentID = strings.ToUpper(testParentID) }, ""},
		{"reply title empty", reply, func(r *restarea.PostRequest) { r.Title = "" }, ""},
		{"reply title 200", reply, func(r *restarea.PostRequest) { r.Title = rep("a", 200) }, ""},
		{"reply title 201", reply, func(r *restarea.PostRequest) { r.Title = rep("a", 201) }, "title"},

		// body
		{"body missing", question, func(r *restarea.PostRequest) { r.Body = "" }, "body"},
		{"body 1", question, func(r *restarea.PostRequest) { r.Body = "x" }, ""},
		{"body 20000", question, func(r *restarea.PostRequest) { r.Body = rep("a", 20000) }, ""},
		{"body 20001", question, func(r *restarea.PostRequest) { r.Body = rep("a", 20001) }, "body"},
		{"reply body missing", reply, func(r *restarea.PostRequest) { r.Body = "" }, "body"},
		{"body 20000 kanji (60000 bytes)", question, func(r *restarea.PostRequest) { r.Body = rep("漢", 20000) }, ""},
		{"body 20001 kanji", question, func(r *restarea.PostRequest) { r.Body = rep("漢", 20001) }, "body"},
		{"body 20000 after crlf unified (30000 before)", question, func(r *restarea.PostRequest) { r.Body = rep("a\r\n", 10000) }, ""},
		{"body 20002 after crlf unified", question, func(r *restarea.PostRequest) { r.Body = rep("a\r\n", 10001) }, "body"},

		// actor
		{"actor.name missing", question, func(r *restarea.PostRequest) { r.Actor.Name = "" }, "actor.name"},
		{"actor.name 100", question, func(r *restarea.PostRequest) { r.Actor.Name = rep("n", 100) }, ""},
		{"actor.name 101", question, func(r *restarea.PostRequest) { r.Actor.Name = rep("n", 101) }, "actor.name"},
		{"actor.model empty", question, func(r *restarea.PostRequest) { r.Actor.Model = "" }, ""},
		{"actor.model 100", question, func(r *restarea.PostRequest) { r.Actor.Model = rep("m", 100) }, ""},
		{"actor.model 101", question, func(r *restarea.PostRequest) { r.Actor.Model = rep("m", 101) }, "actor.model"},
		{"actor.trigger empty", question, func(r *restarea.PostRequest) { r.Actor.Trigger = "" }, ""},
		{"actor.trigger 100", question, func(r *restarea.PostRequest) { r.Actor.Trigger = rep("t", 100) }, ""},
		{"actor.trigger 101", question, func(r *restarea.PostRequest) { r.Actor.Trigger = rep("t", 101) }, "actor.trigger"},
		{"reply actor.name missing", reply, func(r *restarea.PostRequest) { r.Actor.Name = "" }, "actor.name"},

		// lengths in runes after normalisation
		{"japanese title 200 runes (600 bytes)", question, func(r *restarea.PostRequest) { r.Title = rep("あ", 200) }, ""},
		{"japanese title 201 runes", question, func(r *restarea.PostRequest) { r.Title = rep("あ", 201) }, "title"},
		{"emoji title 200 runes", question, func(r *restarea.PostRequest) { r.Title = rep("\U0001F600", 200) }, ""},
		{"NFD title 400 runes, NFC 200", question, func(r *restarea.PostRequest) { r.Title = rep("e\u0301", 200) }, ""},
		{"NFD title 402 runes, NFC 201", question, func(r *restarea.PostRequest) { r.Title = rep("e\u0301", 201) }, "title"},
		{"dakuten title 400 runes, NFC 200", question, func(r *restarea.PostRequest) { r.Title = rep("\u304b\u3099", 200) }, ""},
		{"hangul jamo name 300 runes, NFC 100", question, func(r *restarea.PostRequest) { r.Actor.Name = rep("\u1100\u1161\u11a8", 100) }, ""},
		{"NFD model 200 runes, NFC 100", question, func(r *restarea.PostRequest) { r.Actor.Model = rep("e\u0301", 100) }, ""},
		{"NFD trigger 200 runes, NFC 100", question, func(r *restarea.PostRequest) { r.Actor.Trigger = rep("e\u0301", 100) }, ""},
		{"NFD reply title 400 runes, NFC 200", reply, func(r *restarea.PostRequest) { r.Title = rep("e\u0301", 200) }, ""},
		{"NFD body 40000 runes, NFC 20000", question, func(r *restarea.PostRequest) { r.Body = rep("e\u0301", 20000) }, ""},

		// invalid UTF-8 in each text field
		{"title invalid utf-8", question, func(r *restarea.PostRequest) { r.Title = "ok\xffok" }, "title"},
		{"reply title invalid utf-8", reply, func(r *restarea.PostRequest) { r.Title = "\xc3" }, "title"},
		{"body invalid utf-8", question, func(r *restarea.PostRequest) { r.Body = "a\xed\xa0\x80b" }, "body"}, // encoded surrogate
		{"actor.name invalid utf-8", question, func(r *restarea.PostRequest) { r.Actor.Name = "\xfe" }, "actor.name"},
		{"actor.model invalid utf-8", question, func(r *restarea.PostRequest) { r.Actor.Model = "\xc0\xaf" }, "actor.model"}, // overlong
		{"actor.trigger invalid utf-8", question, func(r *restarea.PostRequest) { r.Actor.Trigger = "x\x80" }, "actor.trigger"},

		// control characters: C0 other than \n and \t, and DEL, in every text field
		{"body nul", question, func(r *restarea.PostRequest) { r.Body = "a\x00b" }, "body"},
		{"body esc", question, func(r *restarea.PostRequest) { r.Body = "\x1b[2Jcleared" }, "body"},
		{"body del", question, func(r *restarea.PostRequest) { r.Body = "a\x7fb" }, "body"},
		{"body bell", question, func(r *restarea.PostRequest) { r.Body = "\a" }, "body"},
		{"body unit separator", question, func(r *restarea.PostRequest) { r.Body = "a\x1f" }, "body"},
		{"body vertical tab", question, func(r *restarea.PostRequest) { r.Body = "a\vb" }, "body"},
		{"body form feed", question, func(r *restarea.PostRequest) { r.Body = "a\fb" }, "body"},
		{"body backspace", question, func(r *restarea.PostRequest) { r.Body = "a\bb" }, "body"},
		{"body tab and newline kept", question, func(r *restarea.PostRequest) { r.Body = "a\tb\nc" }, ""},
		{"body cr allowed (normalised to lf first)", question, func(r *restarea.PostRequest) { r.Body = "a\rb\r\nc" }, ""},
		{"body space and tilde kept", question, func(r *restarea.PostRequest) { r.Body = " ~" }, ""},
		{"body c1 control kept (not C0)", question, func(r *restarea.PostRequest) { r.Body = "a\u0085b" }, ""},
		{"title nul", question, func(r *restarea.PostRequest) { r.Title = "t\x00" }, "title"},
		{"title esc", question, func(r *restarea.PostRequest) { r.Title = "\x1b]0;pwned\x07" }, "title"},
		{"reply title del", reply, func(r *restarea.PostRequest) { r.Title = "\x7f" }, "title"},
		{"actor.name nul", question, func(r *restarea.PostRequest) { r.Actor.Name = "agent\x00" }, "actor.name"},
		{"actor.model esc", question, func(r *restarea.PostRequest) { r.Actor.Model = "\x1bm" }, "actor.model"},
		{"actor.trigger del", question, func(r *restarea.PostRequest) { r.Actor.Trigger = "x\x7f" }, "actor.trigger"},
		{"actor.name cr allowed", question, func(r *restarea.PostRequest) { r.Actor.Name = "a\rb" }, ""},

		// bidi formatting characters: refused in actor fields only
		{"actor.name RLO", question, func(r *restarea.PostRequest) { r.Actor.Name = "evil\u202egpt" }, "actor.name"},
		{"actor.name LRE", question, func(r *restarea.PostRequest) { r.Actor.Name = "\u202aa" }, "actor.name"},
		{"actor.name PDF", question, func(r *restarea.PostRequest) { r.Actor.Name = "a\u202c" }, "actor.name"},
		{"actor.model LRI", question, func(r *restarea.PostRequest) { r.Actor.Model = "m\u2066" }, "actor.model"},
		{"actor.trigger PDI", question, func(r *restarea.PostRequest) { r.Actor.Trigger = "t\u2069" }, "actor.trigger"},
		{"actor.trigger FSI", question, func(r *restarea.PostRequest) { r.Actor.Trigger = "\u2068t" }, "actor.trigger"},
		{"actor.name RLM kept (a mark, not an override)", question, func(r *restarea.PostRequest) { r.Actor.Name = "a\u200fb" }, ""},
		{"actor.name hebrew kept", question, func(r *restarea.PostRequest) { r.Actor.Name = "\u05e9\u05dc\u05d5\u05dd" }, ""},
		{"title RLO kept", question, func(r *restarea.PostRequest) { r.Title = "a\u202eb" }, ""},
		{"body RLI kept", question, func(r *restarea.PostRequest) { r.Body = "a\u2067b\u2069" }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.base()
			tt.edit(&r)
			got, err := r.Normalize()
			if tt.field != "" {
				wantInvalid(t, err, tt.field)
				return
			}
			if err != nil {
				t.Fatalf("Normalize: %v", err)
			}
			again, err := got.Normalize()
			if err != nil || again != got {
				t.Fatalf("not idempotent: %v\n once  %+v\n twice %+v", err, got, again)
			}
			for _, s := range []string{got.Title, got.Body, got.Actor.Name, got.Actor.Model, got.Actor.Trigger} {
				if !utf8.ValidString(s) || !norm.NFC.IsNormalString(s) || strings.ContainsRune(s, '\r') {
					t.Fatalf("field %+q is not normalised", s)
				}
			}
		})
	}
}

func TestSameContent(t *testing.T) {
	normalised := func(t *testing.T, edit func(*restarea.PostRequest)) restarea.Content {
		t.Helper()
		r := reply()
		r.Body = "Caf\u00e9"
		edit(&r)
		n, err := r.Normalize()
		if err != nil {
			t.Fatalf("Normalize(%+v): %v", r, err)
		}
		return n.Content()
	}
	same := func(*restarea.PostRequest) {}
	tests := []struct {
		name string
		a, b func(*restarea.PostRequest)
		same bool
	}{
		{"identical", same, same, true},
		{"request_id differs", same, func(r *restarea.PostRequest) { r.RequestID = testParentID }, true},
		{"request_id case differs", same, func(r *restarea.PostRequest) { r.RequestID = strings.ToUpper(r.RequestID) }, true},
		{"parent_id case differs", same, func(r *restarea.PostRequest) { r.ParentID = strings.ToUpper(r.ParentID) }, true},
		{"NFD vs NFC body", same, func(r *restarea.PostRequest) { r.Body = "Caf\u0065\u0301" }, true},
		{"crlf vs lf body",
			func(r *restarea.PostRequest) { r.Body = "a\nb\nc" },
			func(r *restarea.PostRequest) { r.Body = "a\r\nb\rc" }, true},
		{"NFD vs NFC title",
			func(r *restarea.PostRequest) { r.Title = "\u304c" },
			func(r *restarea.PostRequest) { r.Title = "\u304b\u3099" }, true},
		{"NFD vs NFC actor.name",
			func(r *restarea.PostRequest) { r.Actor.Name = "Jos\u00e9" },
			func(r *restarea.PostRequest) { r.Actor.Name = "Jose\u0301" }, true},
		{"jamo vs syllable actor.model",
			func(r *restarea.PostRequest) { r.Actor.Model = "\uac00" },
			func(r *restarea.PostRequest) { r.Actor.Model = "\u1100\u1161" }, true},
		{"crlf vs lf actor.trigger",
			func(r *restarea.PostRequest) { r.Actor.Trigger = "a\n" },
			func(r *restarea.PostRequest) { r.Actor.Trigger = "a\r\n" }, true},

		// every content member counts (8 of them, see the reflect check below)
		{"type differs", same, func(r *restarea.PostRequest) { r.Type = restarea.TypeQuestion; r.ParentID = ""; r.Title = "t" }, false},
		{"parent_id differs", same, func(r *restarea.PostRequest) { r.ParentID = "00000000-0000-0000-0000-000000000000" }, false},
		{"title differs", same, func(r *restarea.PostRequest) { r.Title = "t" }, false},
		{"body differs", same, func(r *restarea.PostRequest) { r.Body = "Caf\u00e9!" }, false},
		{"actor.name differs", same, func(r *restarea.PostRequest) { r.Actor.Name = "other" }, false},
		{"actor.model differs", same, func(r *restarea.PostRequest) { r.Actor.Model = "other" }, false},
		{"actor.trigger differs", same, func(r *restarea.PostRequest) { r.Actor.Trigger = "other" }, false},
		{"submission_mode differs", same, func(r *restarea.PostRequest) { r.SubmissionMode = restarea.ModeManual }, false},
		{"trailing space differs (no trimming)", same, func(r *restarea.PostRequest) { r.Body = "Caf\u00e9 " }, false},
		{"lf vs no newline differs", same, func(r *restarea.PostRequest) { r.Body = "Caf\u00e9\r\n" }, false},
		{"NFKC is not applied", same, func(r *restarea.PostRequest) { r.Body = "Caf\u00e9\ufb01" }, false},
		{"actor.model emptied differs", same, func(r *restarea.PostRequest) { r.Actor.Model = "" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := normalised(t, tt.a), normalised(t, tt.b)
			if got := restarea.SameContent(a, b); got != tt.same {
				t.Fatalf("SameContent(%+v, %+v) = %v, want %v", a, b, got, tt.same)
			}
			if got := restarea.SameContent(b, a); got != tt.same {
				t.Fatalf("SameContent is not symmetric")
			}
		})
	}

	// The table above changes every member of Content: a new member must be
	// added to it (and to docs/contract.md §1) on purpose.
	if n := leafFields(reflect.TypeOf(restarea.Content{})); n != 8 {
		t.Fatalf("Content has %d members, the table covers 8", n)
	}
}

func leafFields(t reflect.Type) int {
	n := 0
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.Type.Kind() == reflect.Struct {
			n += leafFields(f.Type)
		} else {
			n++
		}
	}
	return n
}

func TestEntryContentExcludesServerFields(t *testing.T) {
	r, err := reply().Normalize()
	if err != nil {
		t.Fatal(err)
	}
	e1 := restarea.Entry{
		ID: "11111111-1111-1111-1111-111111111111", RequestID: r.RequestID,
		Type: r.Type, ParentID: r.ParentID, Title: r.Title, Body: r.Body,
		Actor: r.Actor, SubmissionMode: r.SubmissionMode, Channel: restarea.ChannelHTTP, Visible: true,
	}
	e2 := e1
	e2.ID = "22222222-2222-2222-2222-222222222222"
	e2.RequestID = testParentID
	e2.Channel = restarea.ChannelMCP
	e2.Visible = false
	e2.ByOperator = true
	e2.SetURLs("https://rest.area")
	if !restarea.SameContent(e1.Content(), e2.Content()) {
		t.Fatal("entries differing only in server fields, request_id and channel are not the same content")
	}
	if !restarea.SameContent(e1.Content(), r.Content()) {
		t.Fatalf("entry content %+v != request content %+v", e1.Content(), r.Content())
	}
}
