package decode

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/restarea/restarea"
)

// exactKeysOracle is the token-stream implementation exactKeys replaced.
// It is slow but plainly right, so the byte scanner is checked against it.
func exactKeysOracle(data []byte, t reflect.Type) error {
	return walkKeysOracle(json.NewDecoder(bytes.NewReader(data)), t, "")
}

func walkKeysOracle(dec *json.Decoder, t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return nil
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch delim {
	case '{':
		fields := jsonFieldsOracle(t)
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil
			}
			key, _ := kt.(string)
			name := key
			if path != "" {
				name = path + "." + key
			}
			var ft reflect.Type
			if fields != nil {
				var known bool
				if ft, known = fields[key]; !known {
					return restarea.Errorf(restarea.CodeInvalidRequest, "unknown field %q (field names are case-sensitive)", name)
				}
			}
			if seen[key] {
				return restarea.Errorf(restarea.CodeInvalidRequest, "%s is given twice", name)
			}
			seen[key] = true
			if err := walkKeysOracle(dec, ft, name); err != nil {
				return err
			}
		}
		dec.Token() // '}'
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if err := walkKeysOracle(dec, elem, path); err != nil {
				return err
			}
		}
		dec.Token() // ']'
	}
	return nil
}

// jsonFieldsOracle maps the JSON member names of a struct type to their types;
// nil for anything but a struct (its member names are not checked).
func jsonFieldsOracle(t reflect.Type) map[string]reflect.Type {
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			for k, v := range jsonFieldsOracle(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// KeysEmbed is embedded by keysOuter; it is exported because jsonFields
// only flattens exported embedded structs.
type KeysEmbed struct {
	E string `json:"e"`
}

type keysInner struct {
	Name  string `json:"name"`
	Skip  string `json:"-"`
	Plain int
}

type keysOuter struct {
	KeysEmbed
	Items []keysInner            `json:"items"`
	Ptr   *keysInner             `json:"ptr,omitempty"`
	M     map[string]keysInner   `json:"m"`
	Any   any                    `json:"any"`
	Arr   [2]*keysInner          `json:"arr"`
	Deep  map[string][]keysInner `json:"deep"`
}

var (
	typePost  = reflect.TypeOf(&restarea.PostRequest{})
	typeOuter = reflect.TypeOf(&keysOuter{})
	typeEmpty = reflect.TypeOf(struct{}{})
	typeSlice = reflect.TypeOf([]restarea.PostRequest{})
	typeMap   = reflect.TypeOf(map[string]any{})
)

// manyKeys is an object of n members k0..k(n-1), then the extra members.
func manyKeys(n int, extra ...string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"k` + string(rune('0'+i/10)) + string(rune('0'+i%10)) + `":1`)
	}
	for _, e := range extra {
		b.WriteString("," + e)
	}
	b.WriteString("}")
	return b.String()
}

// nested is n objects deep, each under member "a", around inner.
func nested(n int, inner string) string {
	return strings.Repeat(`{"a":`, n) + inner + strings.Repeat("}", n)
}

const unknownSuffix = " (field names are case-sensitive)"

var exactKeysCases = []struct {
	name string
	in   string
	t    reflect.Type
	want string // the message, or "" for no error
}{
	{"valid post", `{"request_id":"x","type":"question","title":"t","body":"b","actor":{"name":"n","model":"m","trigger":"x"},"submission_mode":"manual"}`, typePost, ""},
	{"upper-case member", `{"BODY":"b"}`, typePost, `unknown field "BODY"` + unknownSuffix},
	{"nested upper-case member", `{"actor":{"NAME":"n"}}`, typePost, `unknown field "actor.NAME"` + unknownSuffix},
	{"escaped key matches", `{"b\u006Fdy":"x"}`, typePost, ""},
	{"escaped key is a duplicate", `{"b\u006fdy":"x","body":"y"}`, typePost, "body is given twice"},
	{"escaped key is a duplicate, plain first", `{"body":"x","\u0062\u006f\u0064\u0079":"y"}`, typePost, "body is given twice"},
	{"escaped nested duplicate", `{"actor":{"name":"a","n\u0061me":"b"}}`, typePost, "actor.name is given twice"},
	{"escaped unknown", `{"B\u004fDY":"x"}`, typePost, `unknown field "BODY"` + unknownSuffix},
	{"escaped quote in key", `{"bo\"dy":1}`, typePost, `unknown field "bo\"dy"` + unknownSuffix},
	{"escaped backslash in key", `{"a\\b":1}`, nil, ""},
	{"escaped backslash key twice", `{"a\\b":1,"a\\b":2}`, nil, `a\b is given twice`},
	{"escaped backslash before quote", `{"a\\":1,"a\\":2}`, nil, `a\ is given twice`},
	{"escaped slash", `{"a\/b":1,"a/b":2}`, nil, "a/b is given twice"},
	{"escaped newline", `{"a\nb":1,"a\u000ab":2}`, nil, "a\nb is given twice"},
	{"all short escapes", `{"\b\f\n\r\t\"\\\/":1,"\u0008\u000c\u000a\u000d\u0009\u0022\u005c\u002f":2}`, nil, "\b\f\n\r\t\"\\/ is given twice"},
	{"unicode key unknown", `{"bödy":1}`, typePost, `unknown field "bödy"` + unknownSuffix},
	{"unicode key escaped twice", `{"ключ":1,"\u043a\u043b\u044e\u0447":2}`, nil, "ключ is given twice"},
	{"surrogate pair key", `{"😀":1,"\ud83d\ude00":2}`, nil, "😀 is given twice"},
	{"surrogate pair upper case", `{"\uD83D\uDE00":1,"\ud83d\ude00":2}`, nil, "😀 is given twice"},
	{"lone surrogates repaired alike", `{"\ud800":1,"\udc00":2}`, nil, "\uFFFD is given twice"},
	{"high surrogate then plain escape", `{"\ud800\u0041":1,"\uFFFDA":2}`, nil, "\uFFFDA is given twice"},
	{"invalid UTF-8 repaired alike", "{\"\xff\":1,\"\xfe\":2}", nil, "\uFFFD is given twice"},
	{"escaped replacement char", `{"\ufffd":1,"�":2}`, nil, "\uFFFD is given twice"},
	{"same prefix is not a duplicate", `{"ab":1,"a":2,"abc":3}`, nil, ""},
	{"empty object, post", `{}`, typePost, ""},
	{"empty actor", `{"actor":{}}`, typePost, ""},
	{"empty key under empty key", `{"":{}}`, nil, ""},
	{"empty key twice", `{"":1,"":2}`, nil, " is given twice"},
	{"empty key twice, nested", `{"a":{"":1,"":2}}`, nil, "a. is given twice"},
	{"empty prefix takes no dot", `{"":{"x":1,"x":2}}`, nil, "x is given twice"},
	{"empty key unknown", `{"":1}`, typePost, `unknown field ""` + unknownSuffix},
	{"array of objects, distinct", `[{"a":1},{"a":1}]`, nil, ""},
	{"array of objects, duplicate", `[{"a":1,"a":2}]`, nil, "a is given twice"},
	{"array adds no path", `{"list":[{"x":1},{"y":{"z":1,"z":2}}]}`, nil, "list.y.z is given twice"},
	{"nested arrays", `[[[],[{"a":[{"b":1,"b":2}]}]]]`, nil, "a.b is given twice"},
	{"deep duplicate", `{"a":{"b":{"c":{"d":1,"d":2}}}}`, nil, "a.b.c.d is given twice"},
	{"top duplicate after nested", `{"actor":{"name":"n"},"actor":{"name":"m"}}`, typePost, "actor is given twice"},
	{"unknown is checked before twice", `{"BODY":1,"BODY":2}`, typePost, `unknown field "BODY"` + unknownSuffix},
	{"slice of posts", `[{"body":"b"},{"BODY":"b"}]`, typeSlice, `unknown field "BODY"` + unknownSuffix},
	{"map of any", `{"K":{"X":1},"k":{"X":1,"X":2}}`, typeMap, "k.X is given twice"},
	{"map values are not checked", `{"m":{"k":{"NAME":1}}}`, typeOuter, ""},
	{"map member twice", `{"m":{"k":1,"k":2}}`, typeOuter, "m.k is given twice"},
	{"slice elements are checked", `{"items":[{"name":"a"},{"NAME":"b"}]}`, typeOuter, `unknown field "items.NAME"` + unknownSuffix},
	{"pointer field", `{"ptr":{"Name":1}}`, typeOuter, `unknown field "ptr.Name"` + unknownSuffix},
	{"array of pointers", `{"arr":[{"name":1},{"Plain":1,"plain":2}]}`, typeOuter, `unknown field "arr.plain"` + unknownSuffix},
	{"untagged field", `{"Plain":1}`, typeOuter, `unknown field "Plain"` + unknownSuffix},
	{"embedded field", `{"e":"x","items":[]}`, typeOuter, ""},
	{"dash-tagged field", `{"items":[{"Skip":1}]}`, typeOuter, `unknown field "items.Skip"` + unknownSuffix},
	{"any field duplicate", `{"any":{"X":1,"X":2}}`, typeOuter, "any.X is given twice"},
	{"any field any names", `{"any":{"X":[{"Y":1}]}}`, typeOuter, ""},
	{"map of slices is unchecked", `{"deep":{"k":[{"NAME":1}]}}`, typeOuter, ""},
	{"empty struct", `{"a":1}`, typeEmpty, `unknown field "a"` + unknownSuffix},
	{"empty struct, empty object", `{}`, typeEmpty, ""},
	{"many members", manyKeys(40), nil, ""},
	{"many members, early one twice", manyKeys(40, `"k03":2`), nil, "k03 is given twice"},
	{"many members, late one twice", manyKeys(30, `"k99":1`, `"k99":2`), nil, "k99 is given twice"},
	{"exactly the inline count, then twice", manyKeys(16, `"k15":2`), nil, "k15 is given twice"},
	{"whitespace everywhere", " \t\n{ \"a\" : 1 ,\r\n \"a\" : [ 1 , { } ] } ", nil, "a is given twice"},
	{"braces inside strings", `{"body":"he said \"}\" ok\\","BODY":1}`, typePost, `unknown field "BODY"` + unknownSuffix},
	{"string value with escapes", `{"a":"\\\"\\","a":"x"}`, nil, "a is given twice"},
	{"literals and numbers", `{"a":true,"b":false,"c":null,"d":-1.5e+10,"e":1e400,"f":0,"a":2}`, nil, "a is given twice"},
	{"overflowing number in an array", `[1e400,{"a":1,"a":2}]`, nil, "a is given twice"},
	{"many members, escaped one twice", manyKeys(20, `"k\u0030\u0035":2`), nil, "k05 is given twice"},
	{"many members of a struct", manyKeys(20), typePost, `unknown field "k00"` + unknownSuffix},
	{"top-level string", `"x"`, typePost, ""},
	{"top-level number", `1e400`, typePost, ""},
	{"top-level null", `null`, typePost, ""},
	{"top-level empty array", `[]`, typePost, ""},
	{"deep but valid", nested(9999, `{"x":1,"x":2}`), nil, strings.Repeat("a.", 9999) + "x is given twice"},
}

// keysMessage is the message of err, "" when there is none.
func keysMessage(err error) string {
	if err == nil {
		return ""
	}
	return restarea.ErrorMessage(err)
}

func TestExactKeys(t *testing.T) {
	for _, tc := range exactKeysCases {
		t.Run(tc.name, func(t *testing.T) {
			if !json.Valid([]byte(tc.in)) {
				t.Fatalf("case is not valid JSON: %q", tc.in)
			}
			for impl, f := range map[string]func([]byte, reflect.Type) error{"exactKeys": exactKeys, "oracle": exactKeysOracle} {
				err := f([]byte(tc.in), tc.t)
				if got := keysMessage(err); got != tc.want {
					t.Errorf("%s = %q, want %q", impl, got, tc.want)
				}
				if err != nil && restarea.ErrorCode(err) != restarea.CodeInvalidRequest {
					t.Errorf("%s code = %q", impl, restarea.ErrorCode(err))
				}
			}
		})
	}
}

// TestExactKeysMalformed feeds bytes the scanner never sees in service
// (they fail decoding first): it must return, not panic or spin.
func TestExactKeysMalformed(t *testing.T) {
	for _, in := range []string{
		"", " ", "{", "[", `"`, `"\`, `{"`, `{"a`, `{"a"`, `{"a":`, `{"a":1`, `{"a":1,`, `{"a" 1}`, `{"a":1 "b":2}`,
		`{1:2}`, `{,}`, `[,]`, `[1 2]`, `}`, `]`, `:`, `,`, "\x00", `{"a":}`, `{"a\`, `{"\u12":1}`, `{"\x":1}`,
		`{"\ud800\u":1}`, `{"a":"b\"}`, `[` + `"` + `\\\"`, strings.Repeat("[", 20000), strings.Repeat(`{"a":`, 20000),
		nested(10000, `{"x":1,"x":2}`),
	} {
		for _, typ := range []reflect.Type{nil, typePost, typeOuter} {
			_ = exactKeys([]byte(in), typ)
		}
	}
}

func FuzzExactKeys(f *testing.F) {
	for _, tc := range exactKeysCases {
		if len(tc.in) < 1000 {
			f.Add([]byte(tc.in))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, typ := range []reflect.Type{typePost, nil, typeOuter} {
			// Any bytes at all: no panic, no endless loop.
			got := exactKeys(data, typ)
			if !json.Valid(data) {
				continue
			}
			want := exactKeysOracle(data, typ)
			if keysMessage(got) != keysMessage(want) || (got == nil) != (want == nil) {
				t.Fatalf("type %v, input %q:\n exactKeys %v\n oracle    %v", typ, data, got, want)
			}
		}
	})
}

// BenchmarkExactKeys compares the byte scanner with the token walk it
// replaced on the body BenchmarkDecodeNormalize decodes.
func BenchmarkExactKeys(b *testing.B) {
	body, _ := json.Marshal(restarea.PostRequest{
		RequestID: "0f8fad5b-d9cb-469f-a165-70867728950e", Type: restarea.TypeQuestion, Title: "a question",
		Body: strings.Repeat("é", 256), Actor: restarea.Actor{Name: "bench", Model: "m"},
		SubmissionMode: restarea.ModeAutonomous,
	})
	for _, bc := range []struct {
		name string
		f    func([]byte, reflect.Type) error
	}{{"scanner", exactKeys}, {"oracle", exactKeysOracle}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if err := bc.f(body, typePost); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
