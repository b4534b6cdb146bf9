package web

import (
	"strings"
	"testing"
)

func TestRenderBlocks(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"heading with id", "## Why {#why}", `<h2 id="why">Why</h2>` + "\n"},
		{"heading without id", "# Title", "<h1>Title</h1>\n"},
		{"not a heading", "#hashtag", "<p>#hashtag</p>\n"},
		{"paragraph lines join", "one\ntwo\n\nthree", "<p>one two</p>\n<p>three</p>\n"},
		{"unordered list", "- a\n- b", "<ul>\n<li>a</li>\n<li>b</li>\n</ul>\n"},
		{"ordered list", "1. a\n2. b", "<ol>\n<li>a</li>\n<li>b</li>\n</ol>\n"},
		{"list then paragraph", "- a\n\npara", "<ul>\n<li>a</li>\n</ul>\n<p>para</p>\n"},
		{"continuation line", "- a\n  more", "<ul>\n<li>a more</li>\n</ul>\n"},
		{"code block escaped", "```\n<b> & x\n```", "<pre><code>&lt;b&gt; &amp; x</code></pre>\n"},
		{"unclosed code block", "```\nx", "<pre><code>x</code></pre>\n"},
		{"inline code", "use `a<b`", "<p>use <code>a&lt;b</code></p>\n"},
		{"strong", "**now**", "<p><strong>now</strong></p>\n"},
		{"link", "[guide](/guide.md)", `<p><a href="/guide.md">guide</a></p>` + "\n"},
		{"unsafe link is text", "[x](javascript:alert(1))", "<p>[x](javascript:alert(1))</p>\n"},
		{"protocol-relative link is text", "[x](//evil.example)", "<p>[x](//evil.example)</p>\n"},
		{"raw html escaped", "<script>alert(1)</script>", "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n"},
		{"japanese", "- 未確認と報告する", "<ul>\n<li>未確認と報告する</li>\n</ul>\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(renderBlocks(tc.in)); got != tc.want {
				t.Errorf("renderBlocks(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestGuideBalanced checks that the rendered guide opens and closes every
// element it uses, in both languages.
func TestGuideBalanced(t *testing.T) {
	g := buildGuide(testBase)
	for name, html := range map[string]string{"en": string(g.en), "ja": string(g.ja)} {
		for _, tag := range []string{"p", "ul", "ol", "li", "pre", "code", "h1", "h2", "h3", "strong", "a"} {
			open := strings.Count(html, "<"+tag+">") + strings.Count(html, "<"+tag+" ")
			closed := strings.Count(html, "</"+tag+">")
			if open != closed {
				t.Errorf("%s: <%s> opened %d times, closed %d", name, tag, open, closed)
			}
		}
		if strings.Contains(html, "{base}") {
			t.Errorf("%s: {base} left unfilled", name)
		}
	}
}
