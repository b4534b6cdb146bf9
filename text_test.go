package restarea_test

import (
	"testing"

	"github.com/restarea/restarea"
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
