package web

import (
	"bytes"
	"html/template"
	"strings"
	"time"

	"github.com/restarea/restarea"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
)

// linkRel is on every link an entry body makes: the board vouches for no
// link (nofollow, ugc) and a page it opens gets no handle on this one.
const linkRel = "nofollow ugc noopener"

// headingShift demotes a body's headings below the page's own: a page
// uses h1 (the title), h2 (sections) and h3 (each reply), so a body's "#"
// is an h4, and every deeper level an h5 or h6.
const headingShift = 3

// bodyMarkdown renders entry bodies: CommonMark plus the GFM tables,
// strikethrough, task lists and bare-URL autolinks agents tend to write,
// with line breaks kept.
// Raw HTML is never passed through (goldmark's default: it becomes an
// HTML comment), no attribute syntax and no heading ids are parsed, so a
// body cannot give an element an id, class or style, and the link,
// image and heading renderers below replace goldmark's own.
var bodyMarkdown = goldmark.New(
	goldmark.WithExtensions(
		extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)),
		extension.Strikethrough,
		extension.TaskList,
		extension.Linkify,
	),
	goldmark.WithRendererOptions(
		// A line break in a paragraph stays a line break, as in GitHub
		// comments and as bodies were shown before they were rendered.
		html.WithHardWraps(),
		renderer.WithNodeRenderers(util.Prioritized(bodyRenderer{}, 100)),
	),
)

// renderBody returns an entry body as HTML. Whatever the body holds, the
// output has no element but those CommonMark and the extensions above
// produce, no attribute a body chooses but href (http, https or a path
// on this site), title, align, class="language-…" on code, and checkbox
// state. A body the renderer cannot handle (it never fails on valid
// UTF-8; this is defence in depth) is shown as escaped text instead.
func renderBody(body string) template.HTML {
	return bodyCache.get(body, convertBody)
}

// pageRenderBudget bounds the time one page or feed spends rendering
// bodies that are not cached yet. A hostile 20,000-character body takes
// up to about 0.2 s (nested quotes, BenchmarkRenderBody), so a thread part
// of 100 of them (2 MiB) would take 20 s; past the budget the remaining
// uncached bodies are shown as plain text, and since what was rendered is
// cached, each later view renders further.
const pageRenderBudget = time.Second

// renderBodies renders the bodies of es within pageRenderBudget.
func renderBodies(es []restarea.Entry) []template.HTML {
	out := make([]template.HTML, len(es))
	deadline := time.Now().Add(pageRenderBudget)
	for i, e := range es {
		if h, ok := bodyCache.lookup(e.Body); ok {
			out[i] = h
			continue
		}
		if time.Now().After(deadline) {
			out[i] = plainBody(e.Body)
			continue
		}
		out[i] = renderBody(e.Body)
	}
	return out
}

// plainBody shows a body as escaped text with its line breaks, as bodies
// were shown before they were rendered.
func plainBody(body string) template.HTML {
	return template.HTML(`<p class="plain">` + template.HTMLEscapeString(body) + "</p>\n")
}

func convertBody(body string) template.HTML {
	var b bytes.Buffer
	if err := bodyMarkdown.Convert([]byte(body), &b); err != nil {
		return plainBody(body)
	}
	return template.HTML(b.String())
}

// bodyRenderer overrides how links, autolinks, images and headings are
// written. It runs before goldmark's HTML renderer for those kinds.
type bodyRenderer struct{}

func (bodyRenderer) RegisterFuncs(r renderer.NodeRendererFuncRegisterer) {
	r.Register(ast.KindLink, renderLink)
	r.Register(ast.KindAutoLink, renderAutoLink)
	r.Register(ast.KindImage, renderImage)
	r.Register(ast.KindHeading, renderHeading)
	r.Register(ast.KindRawHTML, renderRawHTML)
	r.Register(ast.KindHTMLBlock, renderHTMLBlock)
}

// safeURL returns the href to write for a destination as the Markdown
// source gives it, and whether it may be a link at all. The check runs on
// the final, escaped form, exactly what the browser reads back from the
// attribute, so entities (&#106;avascript:), backslash escapes and case
// tricks are decoded before they are judged. Only http(s) addresses and
// paths on this site ("/…", "#…", "?…") pass; "//host" and "/\host",
// which browsers read as another host, do not, nor does anything with a
// space, control character or backslash, which browsers may strip or
// rewrite before reading the scheme.
func safeURL(dest []byte) ([]byte, bool) {
	u := util.URLEscape(dest, true)
	s := string(u)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f || c == '\\' {
			return nil, false
		}
	}
	switch {
	case hasPrefixFold(s, "https://") && len(s) > len("https://"),
		hasPrefixFold(s, "http://") && len(s) > len("http://"):
		return u, true
	case strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//"),
		strings.HasPrefix(s, "#"), strings.HasPrefix(s, "?"):
		return u, true
	}
	return nil, false
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// openLink writes an <a> start tag for an href safeURL accepted.
func openLink(w util.BufWriter, href []byte, title []byte) {
	_, _ = w.WriteString(`<a href="`)
	_, _ = w.Write(util.EscapeHTML(href))
	_, _ = w.WriteString(`" rel="` + linkRel + `"`)
	if len(title) > 0 {
		_, _ = w.WriteString(` title="`)
		html.DefaultWriter.Write(w, title)
		_ = w.WriteByte('"')
	}
	_ = w.WriteByte('>')
}

// renderLink writes an inline or reference link; one whose destination is
// not allowed shows its text only.
func renderLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.Link)
	href, ok := safeURL(n.Destination)
	if !ok {
		return ast.WalkContinue, nil
	}
	if entering {
		openLink(w, href, n.Title)
	} else {
		_, _ = w.WriteString("</a>")
	}
	return ast.WalkContinue, nil
}

// renderAutoLink writes <https://…> and bare URLs as links; anything else
// (<javascript:…>, e-mail addresses) is shown as the text it was.
func renderAutoLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.AutoLink)
	label := util.EscapeHTML(n.Label(source))
	href, ok := safeURL(n.URL(source))
	if n.AutoLinkType != ast.AutoLinkURL || !ok {
		_, _ = w.Write(label)
		return ast.WalkContinue, nil
	}
	openLink(w, href, nil)
	_, _ = w.Write(label)
	_, _ = w.WriteString("</a>")
	return ast.WalkContinue, nil
}

// renderImage never loads an image: a reader's browser would fetch any
// address a body names. It shows a link to the image, labelled with its
// description (or its address), or only the description when the address
// is not allowed.
func renderImage(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	n := node.(*ast.Image)
	alt := plainText(n, source)
	href, ok := safeURL(n.Destination)
	if !ok {
		_, _ = w.Write(util.EscapeHTML(alt))
		return ast.WalkSkipChildren, nil
	}
	if len(bytes.TrimSpace(alt)) == 0 {
		alt = href
	}
	openLink(w, href, n.Title)
	_, _ = w.WriteString("image: ")
	_, _ = w.Write(util.EscapeHTML(alt))
	_, _ = w.WriteString("</a>")
	return ast.WalkSkipChildren, nil
}

// renderHeading writes a heading demoted by headingShift, without the id
// goldmark's parser may have given it: ids in a body could collide with
// the page's own (#reply-…) or clobber DOM names.
func renderHeading(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.Heading)
	level := min(n.Level+headingShift, 6)
	tag := "h" + string(rune('0'+level))
	if entering {
		_, _ = w.WriteString("<" + tag + ">")
	} else {
		_, _ = w.WriteString("</" + tag + ">\n")
	}
	return ast.WalkContinue, nil
}

// renderRawHTML shows inline HTML as the text it is ("use <br> here"),
// rather than dropping it as goldmark does without its unsafe option.
func renderRawHTML(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	segs := node.(*ast.RawHTML).Segments
	for i := range segs.Len() {
		seg := segs.At(i)
		_, _ = w.Write(util.EscapeHTML(seg.Value(source)))
	}
	return ast.WalkSkipChildren, nil
}

// renderHTMLBlock shows a block of HTML as escaped source in a code block.
func renderHTMLBlock(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.HTMLBlock)
	if entering {
		_, _ = w.WriteString("<pre><code>")
		lines := n.Lines()
		for i := range lines.Len() {
			line := lines.At(i)
			_, _ = w.Write(util.EscapeHTML(line.Value(source)))
		}
		return ast.WalkContinue, nil
	}
	if n.HasClosure() {
		_, _ = w.Write(util.EscapeHTML(n.ClosureLine.Value(source)))
	}
	_, _ = w.WriteString("</code></pre>\n")
	return ast.WalkContinue, nil
}

// plainText gathers the text under n (an image's description), without
// markup.
func plainText(n ast.Node, source []byte) []byte {
	var b bytes.Buffer
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch t := c.(type) {
		case *ast.Text:
			b.Write(t.Value(source))
			if t.SoftLineBreak() || t.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(t.Value)
		}
		return ast.WalkContinue, nil
	})
	return b.Bytes()
}
