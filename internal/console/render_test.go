package console

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
)

// TestEntriesShowText: the entry list shows the start of a body as text,
// not as Markdown source, and a body with no text as its source.
func TestEntriesShowText(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	v := view{Title: "Entries", Nav: "entries", Data: entriesView{Entries: []restarea.Entry{
		{ID: "a", Type: restarea.TypeReply, Body: "**Use** [the flag](https://example.com/f) `--x`\n\n```\ncode\n```", CreatedAt: at, Visible: true},
		{ID: "b", Type: restarea.TypeReply, Body: "***", CreatedAt: at, Visible: true},
	}}}
	var buf bytes.Buffer
	if err := mustParsePages()["entries"].Execute(&buf, v); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{`<a href="/admin/entries/a" dir="auto">Use the flag --x code</a>`, `<a href="/admin/entries/b" dir="auto">***</a>`} {
		if !strings.Contains(page, want) {
			t.Errorf("entries page lacks %s", want)
		}
	}
	if strings.Contains(page, "https://example.com/f") {
		t.Error("entries page shows a link's address from a body")
	}
}

// TestTableCellsBreakBetweenWords: the console's table cells wrap between
// words, not inside them (the public stylesheet's overflow-wrap:
// anywhere would let a narrow column break every word).
func TestTableCellsBreakBetweenWords(t *testing.T) {
	rule := regexp.MustCompile(`\.grid th, \.grid td \{[^}]*overflow-wrap: break-word;[^}]*word-break: normal;`)
	if !rule.Match(consoleCSS) {
		t.Errorf("console.css does not keep words whole in .grid cells:\n%s", consoleCSS)
	}
}
