package jsonstr

import (
	"encoding/json"
	"testing"
)

// rawQuote reports whether s holds a quote that is not escaped: such an
// s is not the inside of one JSON string.
func rawQuote(s []byte) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return true
		}
	}
	return false
}

// same fails t unless Unquote and encoding/json agree on the string
// literal "s": both refuse it, or both decode it to the same text.
func same(t *testing.T, s []byte) {
	t.Helper()
	if rawQuote(s) {
		return
	}
	var want string
	jerr := json.Unmarshal(append(append([]byte{'"'}, s...), '"'), &want)
	got, ok := Unquote(s)
	switch {
	case ok != (jerr == nil):
		t.Fatalf("%q: Unquote ok=%v, encoding/json err=%v", s, ok, jerr)
	case ok && string(got) != want:
		t.Fatalf("%q: Unquote %q, encoding/json %q", s, got, want)
	}
}

func TestUnquoteAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range []string{
		``, `plain`, `日本語`, `\"\\\/\b\f\n\r\t`, `\u00e9\u2028`, `\ud83d\ude00`, `\ud83d`, `\ude00x`,
		`\ud83d\u0041`, "\xff\xfe", "a\xc3", `\'`, `\x41`, `\u12`, `\u12g4`, "tab\there", "\x00", `\`,
		"\x7f", `\U0041`,
	} {
		same(t, []byte(s))
	}
}

func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`a\u00e9\n`, `\ud83d\ude00`, "\xff", `\'`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) { same(t, s) })
}
