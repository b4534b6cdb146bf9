package mdtext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestExcerpt(t *testing.T) {
	tests := []struct{ md, want string }{
		{"plain text", "plain text"},
		{"**bold** and _em_ and ~~gone~~", "bold and em and gone"},
		{"See [the guide](https://example.com/guide) now", "See the guide now"},
		{"![a cat](cat.png) sits", "a cat sits"},
		{"Use `go test ./...` here", "Use go test ./... here"},
		{"# Title\n\nBody text", "Title Body text"},
		{"Setext\n======\nnext", "Setext next"},
		{"```go\nfunc main() {}\n```\nafter", "func main() {} after"},
		{"    indented code\n\npara", "indented code para"},
		{"- one\n- two\n  - three", "one two three"},
		{"1. first\n2. second", "first second"},
		{"> quoted *text*", "quoted text"},
		{"| a | b |\n|---|---|\n| 1 | 2 |", "a b 1 2"},
		{"- [x] done\n- [ ] todo", "done todo"},
		{"visit https://example.com/x now", "visit https://example.com/x now"},
		{"<https://example.com/y>", "https://example.com/y"},
		{"a <b>bold</b> word", "a bold word"},
		{"<div>\nblock html\n</div>\n\nafter", "after"},
		{`\*not em\* &amp; &#x41; &copy;`, "*not em* & A ©"},
		{"`&amp; \\*`", `&amp; \*`},
		{"line one\nline two  \nline three", "line one line two line three"},
		{"日本語の**強調**です", "日本語の強調です"},
		{"", ""},
		{"***", ""},
	}
	for _, tt := range tests {
		if got := Excerpt(tt.md, 240); got != tt.want {
			t.Errorf("Excerpt(%q) = %q, want %q", tt.md, got, tt.want)
		}
	}
}

func TestExcerptCut(t *testing.T) {
	long := strings.Repeat("word ", 100)
	got := Excerpt(long, 20)
	if got != strings.TrimSpace(long[:20])+"…" {
		t.Errorf("cut to 20: %q", got)
	}
	// A body longer than sourceBytes is read in part, cut at a rune
	// boundary, and marked as cut even when its text is short.
	jp := strings.Repeat("あ", sourceBytes) // 3 bytes each, no line break
	got = Excerpt(jp, 240)
	if !utf8.ValidString(got) || utf8.RuneCountInString(got) != 241 || !strings.HasSuffix(got, "…") {
		t.Errorf("long Japanese body: %d runes, valid %v", utf8.RuneCountInString(got), utf8.ValidString(got))
	}
	code := "```\n" + strings.Repeat("x\n", sourceBytes) + "```"
	if got := Excerpt(code, 1000); !strings.HasSuffix(got, "…") || strings.Contains(got, "`") {
		t.Errorf("long code block: %.80q", got)
	}
	links := strings.Repeat("[some link text](https://example.com/"+strings.Repeat("p", 60)+") ", 100)
	if got := Excerpt(links, 240); strings.Contains(got, "example.com") || !strings.HasSuffix(got, "…") {
		t.Errorf("links: %.80q", got)
	}
}

// TestExcerptHostileBounded: a body built to be slow to parse costs an
// excerpt only its first sourceBytes.
func TestExcerptHostileBounded(t *testing.T) {
	body := strings.Repeat(">", 20000)
	if got := Excerpt(body, 240); strings.Contains(got, ">") {
		t.Errorf("nested quotes: %.80q", got)
	}
}

func BenchmarkExcerptHostile(b *testing.B) {
	bodies := []string{strings.Repeat(">", 20000), strings.Repeat("*a ", 7000), strings.Repeat("[", 20000)}
	for b.Loop() {
		for _, body := range bodies {
			Excerpt(body, 240)
		}
	}
}
