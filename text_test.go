package restarea_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/restarea/restarea"
	"golang.org/x/text/unicode/norm"
)

func TestDisplayText(t *testing.T) {
	for _, tt := range []struct{ in, text, body string }{
		{"plain", "plain", "plain"},
		{"gpt\u202e4-o", "gpt4-o", "gpt\u202e4-o"},
		{"\u2066a\u2069\u2067b\u2068c\u202a\u202b\u202c\u202d", "abc", "\u2066a\u2069\u2067b\u2068c\u202a\u202b\u202c\u202d"},
		{"esc\x1b[2J", "esc\ufffd[2J", "esc\ufffd[2J"},
		{"nul\x00 del\x7f", "nul\ufffd del\ufffd", "nul\ufffd del\ufffd"},
		{"tab\tline\n", "tab\tline\n", "tab\tline\n"},
		{"\u05e9\u05dc\u05d5\u05dd \u200f", "\u05e9\u05dc\u05d5\u05dd \u200f", "\u05e9\u05dc\u05d5\u05dd \u200f"},
	} {
		if got := restarea.DisplayText(tt.in); got != tt.text {
			t.Errorf("DisplayText(%+q) = %+q, want %+q", tt.in, got, tt.text)
		}
		if got := restarea.DisplayBody(tt.in); got != tt.body {
			t.Errorf("DisplayBody(%+q) = %+q, want %+q", tt.in, got, tt.body)
		}
	}
}

func FuzzNormalizeText(f *testing.F) {
	for _, s := range []string{
		"", "a", "e\u0301", "\u00e9", "\u1100\u1161\u11a8", "\u304b\u3099", "\r\n", "\r", "\r\r\n\n",
		"e\r\n\u0301", "\r\u0301", "\u0301\u0301\u0301", strings.Repeat("\u0301", 40), "a" + strings.Repeat("\u0f73", 20),
		"\u0344", "\u0f73\u0f75", "\ufb01", "\U0001F600", "\U0001D15E", "\u2ADC", "\u0958", "\xff",
		"\ud55c\uae00 \u65e5\u672c\u8a9e \u00c5\u212b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		out := restarea.NormalizeText(s)
		if !utf8.ValidString(out) {
			t.Fatalf("NormalizeText(%+q) = %+q is not valid UTF-8", s, out)
		}
		if strings.ContainsRune(out, '\r') {
			t.Fatalf("NormalizeText(%+q) = %+q contains \\r", s, out)
		}
		if !norm.NFC.IsNormalString(out) {
			t.Fatalf("NormalizeText(%+q) = %+q is not NFC", s, out)
		}
		if again := restarea.NormalizeText(out); again != out {
			t.Fatalf("not idempotent: %+q -> %+q -> %+q", s, out, again)
		}
		if !strings.ContainsRune(s, '\r') && out != norm.NFC.String(s) {
			t.Fatalf("NormalizeText(%+q) = %+q changed more than NFC", s, out)
		}
	})
}
