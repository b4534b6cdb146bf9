package web

import (
	"fmt"
	"html"
	"html/template"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestRenderBodyMarkdown(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
		bad  []string
	}{
		{"code fence", "```go\nx := `<script>`\n```", []string{`<pre><code class="language-go">x := ` + "`&lt;script&gt;`"}, []string{"```"}},
		{"indented code", "    a < b", []string{"<pre><code>a &lt; b"}, nil},
		{"inline code", "use `a<b`", []string{"<code>a&lt;b</code>"}, nil},
		{"link", "[docs](https://example.com/a?b=1&c=2)", []string{`<a href="https://example.com/a?b=1&amp;c=2" rel="nofollow ugc noopener">docs</a>`}, nil},
		{"site link", "[t](/threads/x#reply-1)", []string{`<a href="/threads/x#reply-1" rel="nofollow ugc noopener">t</a>`}, nil},
		{"fragment link", "[up](#top)", []string{`<a href="#top" rel="nofollow ugc noopener">`}, nil},
		{"mixed-case https", "[x](HTTPS://example.com)", []string{`href="HTTPS://example.com"`}, nil},
		{"link title", `[x](https://e.x "a \"t\"")`, []string{`title="a &quot;t&quot;"`}, nil},
		{"autolink", "<https://example.com>", []string{`<a href="https://example.com" rel="nofollow ugc noopener">https://example.com</a>`}, nil},
		{"bare url", "see www.example.com now", []string{`<a href="http://www.example.com" rel="nofollow ugc noopener">www.example.com</a>`}, nil},
		{"image is a link", "![chart](https://img.example/c.png)", []string{`<a href="https://img.example/c.png" rel="nofollow ugc noopener">image: chart</a>`}, []string{"<img"}},
		{"image without alt", "![](/static/icon.svg)", []string{`>image: /static/icon.svg</a>`}, []string{"<img"}},
		{"image with markup in alt", "![a *b* [c](https://x.y)](https://i.example/p.png)", []string{`>image: a b c</a>`}, []string{"<img", "<em>"}},
		{"headings demoted", "# one\n## two\n### three\n###### six", []string{"<h4>one</h4>", "<h5>two</h5>", "<h6>three</h6>", "<h6>six</h6>"}, []string{"<h1", "<h2", "<h3", "id="}},
		{"setext heading", "Title\n=====", []string{"<h4>Title</h4>"}, nil},
		{"no attribute syntax", "# H {#reply-1 .x}", []string{"<h4>H {#reply-1 .x}</h4>"}, []string{"id="}},
		{"raw inline html shown", "a <b onclick=\"x()\">b</b>", []string{"a &lt;b onclick=&quot;x()&quot;&gt;b&lt;/b&gt;"}, []string{"<b"}},
		{"raw html block shown", "<div>\n<script>alert(1)</script>\n</div>", []string{"<pre><code>&lt;div&gt;\n&lt;script&gt;alert(1)&lt;/script&gt;\n&lt;/div&gt;</code></pre>"}, []string{"<div", "<script"}},
		{"html comment shown", "<!-- c --> x", []string{"&lt;!-- c --&gt;"}, []string{"<!--"}},
		{"table", "| a | b |\n|:--|--:|\n| 1 | 2 |", []string{"<table>", `<th align="left">a</th>`, `<td align="right">2</td>`}, []string{"style="}},
		{"task list", "- [x] done\n- [ ] todo", []string{`<input checked="" disabled="" type="checkbox"> done`}, nil},
		{"strikethrough", "~~old~~", []string{"<del>old</del>"}, nil},
		{"emphasis", "*a* **b**", []string{"<em>a</em> <strong>b</strong>"}, nil},
		{"blockquote", "> q", []string{"<blockquote>\n<p>q</p>"}, nil},
		{"paragraph breaks", "line one\nline two\n\nnext", []string{"<p>line one<br>\nline two</p>\n<p>next</p>"}, nil},
		{"entities", "AT&T &lt;x&gt;", []string{"AT&amp;T &lt;x&gt;"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := string(renderBody(tt.in))
			checkText(t, out, tt.want, tt.bad)
			checkSafeHTML(t, tt.in, out)
		})
	}
}

// TestRenderBodyRefusesURLs covers the ways a link, autolink or image may
// try to reach a script or another scheme. Each is shown as text: no <a>
// comes out.
func TestRenderBodyRefusesURLs(t *testing.T) {
	dests := []string{
		"javascript:alert(1)",
		"JaVaScRiPt:alert(1)",
		"&#106;avascript:alert(1)",
		"&#x6A;avascript:alert(1)",
		"&#0000106;avascript:alert(1)",
		"javascript&colon;alert(1)",
		"java&#09;script:alert(1)",
		"java%09script:alert(1)",
		"%6Aavascript:alert(1)",
		"vbscript:msgbox(1)",
		"VBScript:msgbox(1)",
		"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
		"data:image/png;base64,iVBORw0KGgo=",
		"DATA:text/html,<script>alert(1)</script>",
		"file:///etc/passwd",
		"mailto:a@b.example",
		"ftp://example.com/x",
		"//evil.example/x",
		"\\\\evil.example",
		"<javascript:alert(1)>",
		"< javascript:alert(1)>",
		"relative/path",
		"http:",
		"https://",
		"http:/\\evil.example",
	}
	for _, d := range dests {
		for _, form := range []string{"[click](%s)", "![pic](%s)", "[click][r]\n\n[r]: %s"} {
			in := fmt.Sprintf(form, d)
			out := string(renderBody(in))
			if strings.Contains(out, "<a ") {
				t.Errorf("%q became a link: %s", in, out)
			}
			checkSafeHTML(t, in, out)
		}
	}
	autolinks := []string{
		"<javascript:alert(1)>", "<JAVASCRIPT:alert(1)>", "<vbscript:x>", "<data:text/html,x>",
		"<mailto:a@b.example>", "<a@b.example>", "a@b.example", "<file:///etc/passwd>",
	}
	for _, in := range autolinks {
		out := string(renderBody(in))
		if strings.Contains(out, "<a ") {
			t.Errorf("%q became a link: %s", in, out)
		}
		checkSafeHTML(t, in, out)
	}
}

// The elements and attributes renderBody may produce. Anything else in
// the output is a failure of the renderer's configuration.
var (
	allowedTags = map[string]bool{
		"p": true, "a": true, "em": true, "strong": true, "code": true, "pre": true, "del": true,
		"h4": true, "h5": true, "h6": true, "ul": true, "ol": true, "li": true, "blockquote": true,
		"hr": true, "br": true, "table": true, "thead": true, "tbody": true, "tr": true, "th": true, "td": true,
		"input": true,
	}
	allowedAttrs = map[string]bool{
		"href": true, "rel": true, "title": true, "class": true, "align": true, "start": true,
		"checked": true, "disabled": true, "type": true,
	}
	tagRE  = regexp.MustCompile(`^<(/?)([a-zA-Z0-9]+)((?:\s+[a-zA-Z-]+(?:="[^"<>]*")?)*)\s*/?>`)
	attrRE = regexp.MustCompile(`\s+([a-zA-Z-]+)(?:="([^"]*)")?`)
)

// checkSafeHTML fails on any output of renderBody that could run script,
// load a resource or style the page: a tag or attribute outside the
// allowed sets (so no <script, <img, <iframe, style= or on*=), a "<" that
// does not start a well-formed tag, an href that is not http(s) or a
// site path once its entities are decoded, or an <a> without the rel.
func checkSafeHTML(t testing.TB, in, out string) {
	t.Helper()
	low := strings.ToLower(out)
	for _, s := range []string{"<script", "<img", "<iframe", "<style", "<!--"} {
		if strings.Contains(low, s) {
			t.Fatalf("output of %q holds %s: %s", in, s, out)
		}
	}
	for i := 0; i < len(out); i++ {
		if out[i] != '<' {
			continue
		}
		m := tagRE.FindStringSubmatch(out[i:])
		if m == nil {
			t.Fatalf("output of %q has a stray '<' at %d: %s", in, i, out)
		}
		name := strings.ToLower(m[2])
		if !allowedTags[name] {
			t.Fatalf("output of %q has element <%s>: %s", in, name, out)
		}
		rel := false
		for _, a := range attrRE.FindAllStringSubmatch(m[3], -1) {
			attr, val := strings.ToLower(a[1]), html.UnescapeString(a[2])
			if strings.HasPrefix(attr, "on") || !allowedAttrs[attr] {
				t.Fatalf("output of %q has attribute %s on <%s>: %s", in, attr, name, out)
			}
			switch attr {
			case "href":
				if !hrefAllowed(val) {
					t.Fatalf("output of %q links to %q: %s", in, val, out)
				}
			case "rel":
				rel = val == linkRel
			case "class":
				if name != "code" || !strings.HasPrefix(val, "language-") {
					t.Fatalf("output of %q has class %q on <%s>", in, val, name)
				}
			case "type":
				if val != "checkbox" {
					t.Fatalf("output of %q has type %q", in, val)
				}
			}
		}
		if name == "a" && m[1] == "" && !rel {
			t.Fatalf("output of %q has a link without rel=%q: %s", in, linkRel, out)
		}
		i += len(m[0]) - 1
	}
}

// hrefAllowed is the test's own statement of the link rule, written apart
// from safeURL: after entity decoding, and ignoring the characters
// browsers strip, the value is an http(s) URL or a site path.
func hrefAllowed(v string) bool {
	v = strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f {
			return -1
		}
		return r
	}, v)
	l := strings.ToLower(v)
	switch {
	case strings.HasPrefix(l, "http://"), strings.HasPrefix(l, "https://"):
		return true
	case strings.HasPrefix(l, "//"), strings.HasPrefix(l, "/\\"):
		return false
	case strings.HasPrefix(l, "/"), strings.HasPrefix(l, "#"), strings.HasPrefix(l, "?"):
		return true
	}
	return false
}

// FuzzRenderBody throws arbitrary bodies at the renderer; every output
// must pass checkSafeHTML.
func FuzzRenderBody(f *testing.F) {
	seeds := []string{
		"[a](javascript:alert(1))", "<script>alert(1)</script>", "<img src=x onerror=alert(1)>",
		"![x](javascript:alert(1))", "[x](&#106;avascript:1)", "<javascript:alert(1)>",
		"<a href=\"javascript:alert(1)\">x</a>", "[x]: javascript:1\n\n[x]", "```\n<script>\n```",
		"| a |\n|---|\n| <script> |", "- [ ] <b onmouseover=x>", "# h {onclick=x}", "www.x.com/<script>",
		"[a](<javascript:alert(1)>)", "[a](java\nscript:1)", "&lt;script&gt;", "<div\nonclick=x>",
		"[`x`](https://e.x)", "***[x](/y)***", "<!-- <script> -->", "<?php x ?>", "<![CDATA[<script>]]>",
		"https://x.y/\"onmouseover=\"alert(1)", "[x](https://a.b \"\\\"onclick=x\")",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if len(in) > 20000 {
			return
		}
		checkSafeHTML(t, in, string(convertBody(in)))
	})
}

// pathological are bodies of the 20,000-character limit shaped to make a
// Markdown parser backtrack or recurse: deep nesting of lists, quotes,
// emphasis, brackets and links.
func pathological() map[string]string {
	const n = 20000
	rep := func(s string) string { return strings.Repeat(s, n/len(s)) }
	var nested strings.Builder
	for i := 0; nested.Len() < n-200; i++ {
		nested.WriteString(strings.Repeat("  ", i%400) + "- item\n")
	}
	return map[string]string{
		"open brackets":     rep("["),
		"open links":        rep("[a]("),
		"nested brackets":   strings.Repeat("[", n/4) + strings.Repeat("]", n/4),
		"emphasis runs":     rep("*a_"),
		"emphasis openers":  rep("*"),
		"emphasis mixed":    rep("**_"),
		"nested quotes":     rep(">"),
		"nested lists":      nested.String(),
		"list markers":      rep("- "),
		"backticks":         rep("`a``"),
		"entity-like":       rep("&#"),
		"autolink openers":  rep("<http://"),
		"raw html openers":  rep("<a "),
		"table columns":     "|" + rep("a|") + "\n|" + rep("-|") + "\n",
		"link references":   rep("[a]: /b\n"),
		"reference uses":    "[a]: /b\n\n" + rep("[a]"),
		"linkify www":       rep("www."),
		"images in images":  strings.Repeat("![", n/4) + strings.Repeat("](/x)", n/8),
		"unclosed fences":   rep("```\n"),
		"underscore words":  rep("a_b_"),
		"strikethrough":     rep("~~a"),
		"hard line breaks":  rep("a  \n"),
		"setext underlines": rep("a\n=\n"),
	}
}

// TestRenderBodyBounded renders each pathological body of the maximum
// size and fails if one takes more than a second (they take a few
// milliseconds) or produces unbounded output.
func TestRenderBodyBounded(t *testing.T) {
	for name, in := range pathological() {
		start := time.Now()
		out := convertBody(in)
		took := time.Since(start)
		if took > time.Second && !raceBuild {
			t.Errorf("%s: %d bytes took %s", name, len(in), took)
		}
		if len(out) > 40*len(in)+1024 {
			t.Errorf("%s: %d bytes gave %d bytes of HTML", name, len(in), len(out))
		}
		checkSafeHTML(t, name, string(out))
	}
}

func BenchmarkRenderBody(b *testing.B) {
	for name, in := range pathological() {
		b.Run(strings.ReplaceAll(name, " ", "_"), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				convertBody(in)
			}
		})
	}
}

func TestHTMLCacheBounded(t *testing.T) {
	c := newHTMLCache(100)
	calls := 0
	render := func(s string) template.HTML { calls++; return template.HTML(s) }
	for i := range 50 {
		c.get(fmt.Sprintf("%040d", i), render)
	}
	if c.size > 100 || len(c.items) != 2 || len(c.order) != 2 {
		t.Fatalf("cache holds %d bytes in %d items (%d ordered), want at most 100 in 2", c.size, len(c.items), len(c.order))
	}
	calls = 0
	if got := c.get(fmt.Sprintf("%040d", 49), render); string(got) != fmt.Sprintf("%040d", 49) || calls != 0 {
		t.Fatalf("hit rendered again (%d calls) or gave %q", calls, got)
	}
	c.get(strings.Repeat("x", 200), render)
	if c.size > 100 {
		t.Fatalf("an item over the bound was kept: %d bytes", c.size)
	}
}

// typicalBody is a reply of the kind agents post: prose, a list, a code
// fence and a link, about 1,600 characters.
var typicalBody = strings.Repeat("Retrying is safe when the **same** `request_id` is sent with the same content.\n\n"+
	"- step one: record the id\n- step two: post\n\n```go\nres, err := c.Post(ctx, req)\n```\n\nSee [the guide](/guide#retries).\n\n", 6)

func BenchmarkRenderBodyTypical(b *testing.B) {
	b.SetBytes(int64(len(typicalBody)))
	for b.Loop() {
		convertBody(typicalBody)
	}
}

// TestThreadPageRenderBudget: a thread of hostile bodies is served within
// about pageRenderBudget; the bodies past it are shown as plain text, and
// the next view, finding the first ones cached, renders further.
func TestThreadPageRenderBudget(t *testing.T) {
	f := newBoard()
	q := fakeID(7, 1)
	addQuestion(f, q, "deep", "quotes below")
	const n = 40
	hostile := strings.Repeat(">", 20000-8)
	for i := range n {
		addReply(f, q, fakeID(8, i), "", fmt.Sprintf("%s %07d", hostile, i)) // unique, so never cached before
	}
	srv := serve(t, f)
	plain := func() int {
		start := time.Now()
		a := get(t, srv, "/threads/"+q)
		took := time.Since(start)
		if a.status != 200 {
			t.Fatalf("status %d", a.status)
		}
		// The budget can be passed by the one body being rendered when it
		// runs out (about 0.2 s here, far more under -race).
		if took > pageRenderBudget+2*time.Second && !raceBuild {
			t.Errorf("page took %s, budget %s", took, pageRenderBudget)
		}
		c := strings.Count(a.body, `<p class="plain">`)
		t.Logf("view in %s, %d of %d bodies plain", took, c, n)
		return c
	}
	first := plain()
	if first == 0 {
		t.Skipf("this machine rendered %d hostile bodies within %s; nothing to check", n, pageRenderBudget)
	}
	if second := plain(); second >= first {
		t.Errorf("second view left %d bodies plain, first %d: rendering did not progress", second, first)
	}
}
