package web

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestThreadMarkdown(t *testing.T) {
	srv := serve(t, newBoard())
	a := get(t, srv, "/threads/"+qPlain+".md")
	if a.status != 200 {
		t.Fatalf("status %d:\n%s", a.status, a.body)
	}
	if got := a.header.Get("Content-Type"); got != "text/markdown; charset=utf-8" {
		t.Errorf("Content-Type %q", got)
	}
	if got := a.header.Get("Cache-Control"); got != cachePage {
		t.Errorf("Cache-Control %q", got)
	}
	checkText(t, a.body, []string{
		"# How do retries work?\n",
		"- URL: <" + testBase + "/threads/" + qPlain + ">",
		"```text\nline one\nline two\n```\n",
		"## Replies (2)",
		"### Reply 1\n",
		"- Reply id: `" + rFirst + "`",
		"- URL: <" + testBase + "/threads/" + qPlain + "#reply-" + rFirst + ">",
		"- Bookmark: <" + testBase + "/replies/" + rFirst + ">",
		"```text\nFirst reply body\n```",
		"### Reply 2: \\<b\\>bold?\\</b\\>",
		"- Author (self-reported): asker (model: model-q)",
		"- Trigger (self-reported): a user asked",
		"2026-03-01 09:30:00 UTC",
		"## How to reply",
		"curl -sS -X POST " + testBase + "/api/v1/entries -H 'Content-Type: application/json' -d '{",
		`"request_id": "<new UUIDv4>"`,
		`"request_id": "<new UUID from new_request_id>"`,
		"<" + testBase + "/mcp>",
		"<" + testBase + "/guide.md>",
		"unconfirmed",
	}, []string{"HIDDEN REPLY BODY", rHidden})

	// The body's own "## How to reply" stays inside its fence: the file
	// has exactly one such heading outside fences.
	if got := headingsOutsideFences(a.body, "## How to reply"); got != 1 {
		t.Errorf("%d \"## How to reply\" headings outside fences, want 1", got)
	}
	if !strings.Contains(a.body, "````text\n"+trickyBody+"\n````\n") {
		t.Errorf("tricky body not fenced with four backticks:\n%s", a.body)
	}

	// The MCP arguments and the curl body are valid JSON for a reply to
	// this thread.
	blocks := codeBlocks(a.body)
	var mcpArgs, curlArgs map[string]any
	for _, b := range blocks {
		switch {
		case b.lang == "json":
			if err := json.Unmarshal([]byte(b.text), &mcpArgs); err != nil {
				t.Errorf("MCP arguments are not JSON: %v\n%s", err, b.text)
			}
		case b.lang == "sh":
			_, js, _ := strings.Cut(b.text, "-d '")
			js = strings.TrimSuffix(strings.TrimSpace(js), "'")
			if err := json.Unmarshal([]byte(js), &curlArgs); err != nil {
				t.Errorf("curl body is not JSON: %v\n%s", err, js)
			}
		}
	}
	for name, args := range map[string]map[string]any{"mcp": mcpArgs, "curl": curlArgs} {
		if args["type"] != "reply" || args["parent_id"] != qPlain || args["submission_mode"] != "autonomous" {
			t.Errorf("%s arguments: %v", name, args)
		}
		for _, k := range []string{"request_id", "body", "actor"} {
			if _, ok := args[k]; !ok {
				t.Errorf("%s arguments lack %s", name, k)
			}
		}
	}
	if mcpArgs["request_id"] != "<new UUID from new_request_id>" {
		t.Errorf("MCP request_id placeholder %v", mcpArgs["request_id"])
	}
}

func TestThreadMarkdownEscapes(t *testing.T) {
	srv := serve(t, newBoard())
	tests := []struct {
		name string
		path string
		want []string
		bad  []string
	}{
		{"script title", "/threads/" + qScript + ".md",
			[]string{"# \\<script\\>alert\\(\"x\"\\)\\</script\\> \\& co\n", "```text\n<img src=x onerror=alert(1)>\n```"},
			[]string{"# <script>"}},
		{"japanese", "/threads/" + strings.ToUpper(qJapanese) + ".md",
			[]string{"# " + japaneseTitle + "\n", "```text\n" + japaneseBody + "\n```", "## Replies (0)", "No replies yet."}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := get(t, srv, tc.path)
			if a.status != 200 {
				t.Fatalf("status %d", a.status)
			}
			checkText(t, a.body, tc.want, tc.bad)
		})
	}
}

func TestThreadMarkdownNotFound(t *testing.T) {
	srv := serve(t, newBoard())
	for _, path := range []string{"/threads/" + qHidden + ".md", "/threads/" + rFirst + ".md", "/threads/x.md", "/threads/.md"} {
		a := get(t, srv, path)
		if a.status != 404 || a.header.Get("Content-Type") != typeMarkdown || a.header.Get("Cache-Control") != cacheNoStore {
			t.Errorf("%s: %d %q %q", path, a.status, a.header.Get("Content-Type"), a.header.Get("Cache-Control"))
		}
		checkText(t, a.body, []string{"# 404 Not found"}, []string{"HIDDEN", "REPLY OF HIDDEN QUESTION"})
	}
}

func TestMDText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain words", "plain words"},
		{"<b>x</b>", `\<b\>x\</b\>`},
		{"[link](http://e)", `\[link\]\(http://e\)`},
		{"*a* _b_ `c`", "\\*a\\* \\_b\\_ \\`c\\`"},
		{"two\nlines\r\n", "two lines  "},
		{"&amp; #1 !x |y ~z", `\&amp; \#1 \!x \|y \~z`},
		{"日本語のタイトル", "日本語のタイトル"},
	}
	for _, tc := range tests {
		if got := mdText(tc.in); got != tc.want {
			t.Errorf("mdText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFence(t *testing.T) {
	tests := []struct{ in, want string }{
		{"text", "```text\ntext\n```\n"},
		{"ends with newline\n", "```text\nends with newline\n```\n"},
		{"a ``` b", "````text\na ``` b\n````\n"},
		{"`````", "``````text\n`````\n``````\n"},
		{"~~~\nx", "```text\n~~~\nx\n```\n"},
	}
	for _, tc := range tests {
		if got := fence(tc.in); got != tc.want {
			t.Errorf("fence(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

type codeBlock struct{ lang, text string }

// codeBlocks returns the fenced blocks of md, following CommonMark's rule
// that a fence is closed only by a fence of its own character at least as
// long.
func codeBlocks(md string) []codeBlock {
	var out []codeBlock
	var cur *codeBlock
	var fenceLen int
	var lines []string
	for _, line := range strings.Split(md, "\n") {
		n := len(line) - len(strings.TrimLeft(line, "`"))
		if cur == nil {
			if n >= 3 {
				cur = &codeBlock{lang: strings.TrimSpace(line[n:])}
				fenceLen, lines = n, nil
			}
			continue
		}
		if n >= fenceLen && strings.TrimSpace(line[n:]) == "" {
			cur.text = strings.Join(lines, "\n")
			out = append(out, *cur)
			cur = nil
			continue
		}
		lines = append(lines, line)
	}
	return out
}

// headingsOutsideFences counts lines equal to heading that are not inside
// a fenced block.
func headingsOutsideFences(md, heading string) int {
	count, fenceLen := 0, 0
	for _, line := range strings.Split(md, "\n") {
		n := len(line) - len(strings.TrimLeft(line, "`"))
		switch {
		case fenceLen == 0 && n >= 3:
			fenceLen = n
		case fenceLen > 0 && n >= fenceLen && strings.TrimSpace(line[n:]) == "":
			fenceLen = 0
		case fenceLen == 0 && line == heading:
			count++
		}
	}
	return count
}
