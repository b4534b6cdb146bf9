package decode_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/decode"
	"golang.org/x/text/unicode/norm"
)

// Valid request and parent ids.
const (
	testRequestID = "0f8fad5b-d9cb-469f-a165-70867728950e"
	testParentID  = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
)

// validJSON is a valid question body; bodies in the tables are built from it.
const validJSON = `{"request_id":"0F8FAD5B-D9CB-469F-A165-70867728950E","type":"question",` +
	`"title":"t","body":"b","actor":{"name":"n","model":"m","trigger":"x"},"submission_mode":"manual"}`

// decodePost decodes a post body as the adapters do and checks it as the
// service does (PostRequest.Normalize).
func decodePost(data []byte) (restarea.PostRequest, error) {
	var r restarea.PostRequest
	if err := decode.JSON(data, &r); err != nil {
		return r, err
	}
	return r.Normalize()
}

// withField returns validJSON with the member name set to the raw JSON
// value raw (added when absent).
func withField(name, raw string) string {
	return strings.Replace(validJSON, `"body":"b"`, `"body":"b","`+name+`":`+raw, 1)
}

// replaceField returns validJSON with the value of member name replaced.
func replaceField(old, repl string) string {
	if !strings.Contains(validJSON, old) {
		panic("no " + old + " in validJSON")
	}
	return strings.Replace(validJSON, old, repl, 1)
}

func TestDecodeJSONErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // substrings of the message
	}{
		{"empty", "", []string{"empty"}},
		{"whitespace only", " \n\t ", []string{"empty"}},
		{"malformed: open brace", "{", []string{"malformed JSON"}},
		{"malformed: missing value", `{"body":}`, []string{"malformed JSON"}},
		{"malformed: single quotes", `{'body':'b'}`, []string{"malformed JSON"}},
		{"malformed: trailing comma", `{"body":"b",}`, []string{"malformed JSON"}},
		{"malformed: unterminated string", `{"body":"b`, []string{"malformed JSON"}},
		{"malformed: bare word", `hello`, []string{"malformed JSON"}},
		{"malformed: raw control character in string", "{\"body\":\"a\x01b\"}", []string{"malformed JSON"}},
		{"malformed: bad escape", `{"body":"\x"}`, []string{"malformed JSON"}},
		{"malformed: short unicode escape", `{"body":"\u12"}`, []string{"malformed JSON"}},
		{"unknown field", withField("color", `"red"`), []string{"unknown field", `"color"`}},
		{"unknown nested field", replaceField(`"trigger":"x"`, `"trigger":"x","email":"e"`), []string{"unknown field", `"email"`}},
		{"wrong type: body number", replaceField(`"body":"b"`, `"body":1`), []string{"body", "string", "number"}},
		{"wrong type: title bool", replaceField(`"title":"t"`, `"title":true`), []string{"title", "string", "bool"}},
		{"wrong type: request_id array", replaceField(`"request_id":"0F8FAD5B-D9CB-469F-A165-70867728950E"`, `"request_id":[]`), []string{"request_id", "string", "array"}},
		{"wrong type: actor string", replaceField(`"actor":{"name":"n","model":"m","trigger":"x"}`, `"actor":"n"`), []string{"actor must be an object", "string"}},
		{"wrong type: actor.name number", replaceField(`"name":"n"`, `"name":5`), []string{"actor.name must be a string", "number"}},
		{"wrong type: actor.model object", replaceField(`"model":"m"`, `"model":{}`), []string{"actor.model must be a string", "object"}},
		{"trailing object", validJSON + "{}", []string{"data after the JSON object"}},
		{"trailing word", validJSON + " x", []string{"data after the JSON object"}},
		{"trailing brace", validJSON + "}", []string{"data after the JSON object"}},
		{"trailing number", validJSON + "1", []string{"data after the JSON object"}},
		{"not an object: array", `[]`, []string{"must be a JSON object", "array"}},
		{"not an object: array of objects", `[` + validJSON + `]`, []string{"must be a JSON object", "array"}},
		{"not an object: string", `"hello"`, []string{"must be a JSON object", "string"}},
		{"not an object: number", `42`, []string{"must be a JSON object", "number"}},
		{"not an object: bool", `true`, []string{"must be a JSON object", "bool"}},
		{"invalid utf-8 in a value", replaceField(`"body":"b"`, "\"body\":\"b\xff\""), []string{"UTF-8"}},
		{"invalid utf-8 truncated sequence", replaceField(`"title":"t"`, "\"title\":\"\xe3\x81\""), []string{"UTF-8"}},
		{"invalid utf-8 encoded surrogate", replaceField(`"body":"b"`, "\"body\":\"\xed\xa0\x80\""), []string{"UTF-8"}},
		{"invalid utf-8 outside strings", validJSON + "\xff", []string{"UTF-8"}},
		{"lone high surrogate", replaceField(`"body":"b"`, `"body":"\ud800"`), []string{"surrogate", "body", `\ud800`}},
		{"lone low surrogate", replaceField(`"body":"b"`, `"body":"\udc00"`), []string{"surrogate", "body", `\udc00`}},
		{"lone high surrogate uppercase", replaceField(`"body":"b"`, `"body":"x\uD83Dy"`), []string{"surrogate"}},
		{"high surrogate at end of string", replaceField(`"body":"b"`, `"body":"\ud83d"`), []string{"surrogate"}},
		{"two high surrogates", replaceField(`"body":"b"`, `"body":"\ud83d\ud83d"`), []string{"surrogate"}},
		{"reversed pair", replaceField(`"body":"b"`, `"body":"\ude00\ud83d"`), []string{"surrogate"}},
		{"high surrogate then escaped backslash", replaceField(`"body":"b"`, `"body":"\ud83d\\ude00"`), []string{"surrogate"}},
		{"escaped backslash then lone surrogate", replaceField(`"body":"b"`, `"body":"\\\ud800"`), []string{"surrogate"}},
		{"lone surrogate in actor.name", replaceField(`"name":"n"`, `"name":"\udfff"`), []string{"surrogate"}},
		{"lone surrogate in a key", `{"\ud800":1}`, []string{"surrogate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r restarea.PostRequest
			err := decode.JSON([]byte(tt.in), &r)
			checkInvalid(t, err, tt.want)
			_, err = decodePost([]byte(tt.in))
			checkInvalid(t, err, tt.want)
		})
	}
}

// TestDecodePostRequestRefusesContent covers what the JSON is fine with but
// the rules of docs/contract.md §1 are not: JSON escapes of control characters,
// bidi overrides in actor fields, request_ids of the wrong version.
func TestDecodePostRequestRefusesContent(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   string
		want []string
	}{
		{"escaped nul in body", replaceField(`"body":"b"`, `"body":"a\u0000b"`), []string{"body must not contain control characters", "U+0000"}},
		{"escaped esc in title", replaceField(`"title":"t"`, `"title":"\u001b[2J"`), []string{"title must not contain control characters", "U+001B"}},
		{"escaped nul in actor.name", replaceField(`"name":"n"`, `"name":"n\u0000"`), []string{"actor.name must not contain control characters"}},
		{"escaped del in actor.trigger", replaceField(`"trigger":"x"`, `"trigger":"\u007f"`), []string{"actor.trigger must not contain control characters", "U+007F"}},
		{"RLO in actor.name", replaceField(`"name":"n"`, `"name":"n\u202e"`), []string{"actor.name must not contain bidirectional", "U+202E"}},
		{"nil request_id", replaceField(`"request_id":"0F8FAD5B-D9CB-469F-A165-70867728950E"`, `"request_id":"00000000-0000-0000-0000-000000000000"`), []string{"request_id", "version 4", "nil UUID"}},
		{"version 1 request_id", replaceField(`"request_id":"0F8FAD5B-D9CB-469F-A165-70867728950E"`, `"request_id":"c232ab00-9414-11ec-b3c8-9f6bdeced846"`), []string{"request_id", "version 4"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodePost([]byte(tt.in))
			checkInvalid(t, err, tt.want)
		})
	}
}

func checkInvalid(t *testing.T, err error, want []string) {
	t.Helper()
	var e *restarea.Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want a *restarea.Error", err, err)
	}
	if e.Code != restarea.CodeInvalidRequest {
		t.Fatalf("code = %q, want invalid_request (%v)", e.Code, err)
	}
	for _, w := range want {
		if !strings.Contains(e.Message, w) {
			t.Fatalf("message %q does not contain %q", e.Message, w)
		}
	}
}

func TestDecodePostRequest(t *testing.T) {
	want := restarea.PostRequest{
		RequestID: testRequestID, Type: restarea.TypeQuestion, Title: "t", Body: "b",
		Actor:          restarea.Actor{Name: "n", Model: "m", Trigger: "x"},
		SubmissionMode: restarea.ModeManual,
	}
	with := func(edit func(*restarea.PostRequest)) restarea.PostRequest {
		r := want
		edit(&r)
		return r
	}
	tests := []struct {
		name string
		in   string
		want restarea.PostRequest
	}{
		{"valid, request_id lowercased", validJSON, want},
		{"surrounding whitespace", " \n" + validJSON + "\r\n\t ", want},
		{"members in another order", `{"submission_mode":"manual","actor":{"trigger":"x","model":"m","name":"n"},` +
			`"body":"b","title":"t","type":"question","request_id":"0f8fad5b-d9cb-469f-a165-70867728950e"}`, want},
		{"valid surrogate pair", replaceField(`"body":"b"`, `"body":"\ud83d\ude00"`), with(func(r *restarea.PostRequest) { r.Body = "\U0001F600" })},
		{"valid surrogate pair uppercase", replaceField(`"body":"b"`, `"body":"\uD83D\uDE00!"`), with(func(r *restarea.PostRequest) { r.Body = "\U0001F600!" })},
		{"escaped backslash before u is a literal", replaceField(`"body":"b"`, `"body":"\\ud800"`), with(func(r *restarea.PostRequest) { r.Body = `\ud800` })},
		{"two escaped backslashes before u", replaceField(`"body":"b"`, `"body":"\\\\udc00"`), with(func(r *restarea.PostRequest) { r.Body = `\\udc00` })},
		{"escaped backslash then valid pair", replaceField(`"body":"b"`, `"body":"\\\ud83d\ude00"`), with(func(r *restarea.PostRequest) { r.Body = "\\\U0001F600" })},
		{"BMP escapes", replaceField(`"body":"b"`, `"body":"\u00e9\u304c\uffff"`), with(func(r *restarea.PostRequest) { r.Body = "\u00e9\u304c\uffff" })},
		{"escaped NFD is normalised", replaceField(`"body":"b"`, `"body":"e\u0301"`), with(func(r *restarea.PostRequest) { r.Body = "\u00e9" })},
		{"raw NFD is normalised", replaceField(`"title":"t"`, "\"title\":\"\u304b\u3099\""), with(func(r *restarea.PostRequest) { r.Title = "\u304c" })},
		{"escaped crlf is unified", replaceField(`"body":"b"`, `"body":"a\r\nb\rc"`), with(func(r *restarea.PostRequest) { r.Body = "a\nb\nc" })},
		{"null parent_id and title on a reply", replaceField(`"type":"question","title":"t"`, `"type":"reply","parent_id":"7C9E6679-7425-40DE-944B-E07FC1F90AE7","title":null`),
			with(func(r *restarea.PostRequest) { r.Type = restarea.TypeReply; r.ParentID = testParentID; r.Title = "" })},
		{"null parent_id on a question", withField("parent_id", "null"), want},
		{"empty parent_id on a question", withField("parent_id", `""`), want},
		{"null model and trigger", replaceField(`"model":"m","trigger":"x"`, `"model":null,"trigger":null`),
			with(func(r *restarea.PostRequest) { r.Actor.Model = ""; r.Actor.Trigger = "" })},
		{"absent model and trigger", replaceField(`,"model":"m","trigger":"x"`, ``),
			with(func(r *restarea.PostRequest) { r.Actor.Model = ""; r.Actor.Trigger = "" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodePost([]byte(tt.in))
			if err != nil {
				t.Fatalf("DecodePostRequest: %v", err)
			}
			if got != tt.want {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestDecodePostRequestValidation checks that decoding goes on to
// validation, whose rules TestNormalizeValidation covers in full.
func TestDecodePostRequestValidation(t *testing.T) {
	tests := []struct {
		name, in, field string
	}{
		{"null body", replaceField(`"body":"b"`, `"body":null`), "body"},
		{"null actor", replaceField(`"actor":{"name":"n","model":"m","trigger":"x"}`, `"actor":null`), "actor.name"},
		{"empty object", `{}`, "request_id"},
		{"JSON null", `null`, "request_id"},
		{"bad request_id", replaceField(`"0F8FAD5B-D9CB-469F-A165-70867728950E"`, `"nope"`), "request_id"},
		{"bad type", replaceField(`"type":"question"`, `"type":"answer"`), "type"},
		{"bad mode", replaceField(`"submission_mode":"manual"`, `"submission_mode":"bot"`), "submission_mode"},
		{"question with parent", withField("parent_id", `"7c9e6679-7425-40de-944b-e07fc1f90ae7"`), "parent_id"},
		{"reply without parent", replaceField(`"type":"question"`, `"type":"reply"`), "parent_id"},
		{"title too long after decoding escapes", replaceField(`"title":"t"`, `"title":"`+strings.Repeat(`\u3042`, 201)+`"`), "title"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodePost([]byte(tt.in))
			checkInvalid(t, err, []string{tt.field + " "})
		})
	}
}

func TestDecodeJSONNullLeavesValue(t *testing.T) {
	// A JSON null is the one non-object DecodeJSON lets through, as "no
	// members": MCP tools rely on it for "arguments": null. Post requests
	// are still refused by validation (TestDecodePostRequestValidation).
	v := struct {
		A string `json:"a"`
	}{A: "kept"}
	if err := decode.JSON([]byte(" null "), &v); err != nil || v.A != "kept" {
		t.Fatalf("DecodeJSON(null) = %v, value %+v", err, v)
	}
}

func TestDecodeJSONGenericTargets(t *testing.T) {
	var patch restarea.SettingsPatch
	if err := decode.JSON([]byte(`{"writes_disabled":true,"global_limit":{"count":5,"window_seconds":60}}`), &patch); err != nil {
		t.Fatal(err)
	}
	if patch.WritesDisabled == nil || !*patch.WritesDisabled || patch.GlobalLimit == nil || *patch.GlobalLimit != (restarea.Limit{Count: 5, WindowSeconds: 60}) || patch.PerSourceLimit != nil {
		t.Fatalf("patch = %+v", patch)
	}
	err := decode.JSON([]byte(`{"global_limit":{"count":"5"}}`), &patch)
	checkInvalid(t, err, []string{"global_limit.count must be a number", "string"})
	err = decode.JSON([]byte(`{"writes_disabled":"yes"}`), &patch)
	checkInvalid(t, err, []string{"writes_disabled must be a boolean"})
	err = decode.JSON([]byte(`{"global_limit":{"count":1.5}}`), &patch)
	checkInvalid(t, err, []string{"global_limit.count"})
}

// fuzzSeeds are the seed corpus of FuzzDecodePostRequest; they run under
// plain go test.
var fuzzSeeds = []string{
	validJSON,
	"",
	"null",
	"[]",
	`"x"`,
	"{}",
	"{",
	validJSON + "{}",
	withField("color", `"red"`),
	replaceField(`"name":"n"`, `"name":5`),
	replaceField(`"body":"b"`, `"body":"\ud800"`),
	replaceField(`"body":"b"`, `"body":"\udc00"`),
	replaceField(`"body":"b"`, `"body":"\ud83d\ude00"`),
	replaceField(`"body":"b"`, `"body":"\\ud800"`),
	replaceField(`"body":"b"`, `"body":"\\\ud800"`),
	replaceField(`"body":"b"`, `"body":"e\u0301\r\n\r"`),
	replaceField(`"body":"b"`, "\"body\":\"\u304b\u3099\u1100\u1161\""),
	replaceField(`"body":"b"`, "\"body\":\"b\xff\""),
	replaceField(`"body":"b"`, `"body":"`+strings.Repeat(`\u0301`, 40)+`"`),
	replaceField(`"body":"b"`, `"body":"a`+strings.Repeat("\u0f73", 20)+`"`),
	replaceField(`"type":"question","title":"t"`, `"type":"reply","parent_id":"7C9E6679-7425-40DE-944B-E07FC1F90AE7","title":null`),
	replaceField(`"model":"m","trigger":"x"`, `"model":null,"trigger":"\r"`),
	replaceField(`"title":"t"`, `"title":"`+strings.Repeat("e\u0301", 200)+`"`),
	replaceField(`"body":"b"`, `"body":"a\u0000b"`),
	replaceField(`"body":"b"`, `"body":"\u001b[31mred\t\r\n"`),
	replaceField(`"body":"b"`, "\"body\":\"del\x7f\""),
	replaceField(`"model":"m"`, `"model":"\u202em"`),
	replaceField(`"model":"m"`, `"model":"\u2066m\u2069"`),
	replaceField(`"title":"t"`, `"title":"\u202et"`),
}

func FuzzDecodePostRequest(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := decodePost(data)
		if err != nil {
			var e *restarea.Error
			if !errors.As(err, &e) || e.Code != restarea.CodeInvalidRequest {
				t.Fatalf("error %v (%T) is not invalid_request", err, err)
			}
			if e.Message == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		again, err := r.Normalize()
		if err != nil {
			t.Fatalf("decoded request does not pass Normalize: %v\n%+v", err, r)
		}
		if again != r {
			t.Fatalf("Normalize is not idempotent on a decoded request:\n once  %+q\n twice %+q", r, again)
		}
		if !restarea.ValidUUID(r.RequestID) || r.RequestID != strings.ToLower(r.RequestID) {
			t.Fatalf("request_id %q is not a lowercase UUID", r.RequestID)
		}
		if r.ParentID != strings.ToLower(r.ParentID) {
			t.Fatalf("parent_id %q is not lowercase", r.ParentID)
		}
		for _, s := range []string{r.Title, r.Body, r.Actor.Name, r.Actor.Model, r.Actor.Trigger} {
			if !utf8.ValidString(s) {
				t.Fatalf("decoded field %+q is not valid UTF-8", s)
			}
			if !norm.NFC.IsNormalString(s) {
				t.Fatalf("decoded field %+q is not NFC", s)
			}
			if strings.ContainsRune(s, '\r') {
				t.Fatalf("decoded field %+q contains \\r", s)
			}
			if strings.ContainsFunc(s, restarea.IsControl) {
				t.Fatalf("decoded field %+q contains a control character", s)
			}
		}
		for _, s := range []string{r.Actor.Name, r.Actor.Model, r.Actor.Trigger} {
			if strings.ContainsFunc(s, restarea.IsBidiControl) {
				t.Fatalf("decoded actor field %+q contains a bidi formatting character", s)
			}
		}
		if !restarea.ValidRequestID(r.RequestID) {
			t.Fatalf("request_id %q is not a UUID of version 4 or 7", r.RequestID)
		}
		// Re-encoding the decoded request and decoding it again gives the
		// same request: what is stored survives a round trip.
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := decodePost(b)
		if err != nil || r2 != r {
			t.Fatalf("round trip: %v\n first  %+q\n second %+q", err, r, r2)
		}
	})
}

// Member names must match exactly and appear once: encoding/json alone
// would take {"BODY": ...} for body and keep the last of two.
func TestDecodeExactKeys(t *testing.T) {
	good := `{"request_id":"6f1c1f3e-1111-4a4a-8b8b-123456789abc","type":"question","title":"t","body":"b","actor":{"name":"n"},"submission_mode":"manual"}`
	if _, err := decodePost([]byte(good)); err != nil {
		t.Fatalf("good request refused: %v", err)
	}
	for _, tc := range []struct{ name, body, want string }{
		{"upper-case member", strings.Replace(good, `"body"`, `"BODY"`, 1), `"BODY"`},
		{"nested case", strings.Replace(good, `{"name":"n"}`, `{"Name":"n"}`, 1), `"actor.Name"`},
		{"duplicate", strings.Replace(good, `"body":"b"`, `"body":"b","body":"c"`, 1), "body is given twice"},
		{"nested duplicate", strings.Replace(good, `{"name":"n"}`, `{"name":"n","name":"m"}`, 1), "actor.name is given twice"},
	} {
		_, err := decodePost([]byte(tc.body))
		if restarea.ErrorCode(err) != restarea.CodeInvalidRequest || !strings.Contains(restarea.ErrorMessage(err), tc.want) {
			t.Errorf("%s: %v, want invalid_request mentioning %s", tc.name, err, tc.want)
		}
	}
}

// A lone surrogate's answer names the field and the character's position,
// as a control character's does.
func TestLoneSurrogateNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"title", `{"title":"a\ud800b"}`, `title must not contain a lone surrogate escape (\ud800 at character 2`},
		{"after a pair", `{"body":"\ud83d\ude00x\udc00"}`, `body must not contain a lone surrogate escape (\udc00 at character 3`},
		{"after escapes", `{"body":"\"\\\n\u00e9\uDBFF"}`, `body must not contain a lone surrogate escape (\uDBFF at character 5`},
		{"nested", `{"title":"t","actor":{"kind":"agent","name":"\udfff"}}`, `actor.name must not contain a lone surrogate escape (\udfff at character 1`},
		{"array element", `{"a":[1,{"b":["x","y\ud800"]}]}`, `a[1].b[1] must not contain`},
		{"a member name", `{"title":"t","\ud800":1}`, `a member name must not contain a lone surrogate escape (\ud800 at character 1`},
		{"a nested member name", `{"actor":{"name":"n","x\ud800":1}}`, `a member name in actor must not contain a lone surrogate escape (\ud800 at character 2`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v map[string]any
			err := decode.JSON([]byte(tc.body), &v)
			if err == nil || restarea.ErrorCode(err) != restarea.CodeInvalidRequest || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want invalid_request containing %q", err, tc.want)
			}
		})
	}
}
