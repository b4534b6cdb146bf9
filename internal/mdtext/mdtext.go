// Package mdtext turns an entry body's Markdown into the text a reader
// sees once it is rendered, for excerpts: the home page's list and the
// operators' console show the start of a body as text, not as Markdown
// source.
package mdtext

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// parser reads the Markdown the pages render (internal/web's bodies):
// CommonMark with the GFM tables, strikethrough, task lists and bare-URL
// autolinks.
var parser = goldmark.New(goldmark.WithExtensions(
	extension.Table, extension.Strikethrough, extension.TaskList, extension.Linkify,
)).Parser()

// Plain returns the text of md as its rendering shows it: emphasis and
// strikethrough markers dropped, a link or an image as its text, code
// spans and code blocks as their code, headings, list items, quotes and
// table cells as their text, entities and backslash escapes resolved.
// Raw HTML is dropped, as the pages drop it. Each block ends with a line
// break. Plain never fails: any UTF-8 text is some Markdown.
func Plain(md string) string {
	src := []byte(md)
	doc := parser.Parse(text.NewReader(src))
	var b bytes.Buffer
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			switch {
			case n.Kind() == east.KindTableCell:
				b.WriteByte(' ')
			case n.Type() == ast.TypeBlock && n.Kind() != ast.KindDocument:
				b.WriteByte('\n')
			}
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Text:
			v := n.Segment.Value(src)
			if !n.IsRaw() {
				v = unescape(v)
			}
			b.Write(v)
			if n.SoftLineBreak() || n.HardLineBreak() {
				b.WriteByte('\n')
			}
		case *ast.String:
			if n.IsCode() || n.IsRaw() {
				b.Write(n.Value)
			} else {
				b.Write(unescape(n.Value))
			}
		case *ast.AutoLink:
			b.Write(n.Label(src))
			return ast.WalkSkipChildren, nil
		case *ast.FencedCodeBlock, *ast.CodeBlock:
			lines := n.Lines()
			for i := 0; i < lines.Len(); i++ {
				seg := lines.At(i)
				b.Write(seg.Value(src))
			}
			return ast.WalkSkipChildren, nil
		case *ast.RawHTML, *ast.HTMLBlock:
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// unescape resolves backslash escapes and character references, as the
// HTML renderer does before it escapes text again.
func unescape(v []byte) []byte {
	return util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(v)))
}

// sourceBytes bounds how much of a body Excerpt reads: an excerpt shows
// a few hundred characters, and parsing a whole hostile body (20,000
// characters of nested quotes) for each one would cost a page dearly; 2 KiB
// of the worst kind takes a few milliseconds.
const sourceBytes = 2048

// Excerpt returns the start of md's text (Plain) on one line, with runs
// of white space made one space, at most n runes and then "…" when
// there is more.
func Excerpt(md string, n int) string {
	cut := len(md) > sourceBytes
	if cut {
		md = md[:sourceBytes]
		// A cut inside a rune or a line would show half of it; cut
		// after the last whole line, or else at a rune boundary.
		if i := strings.LastIndexByte(md, '\n'); i > sourceBytes/2 {
			md = md[:i]
		} else {
			for len(md) > 0 {
				if r, size := utf8.DecodeLastRuneInString(md); r != utf8.RuneError || size > 1 {
					break
				}
				md = md[:len(md)-1]
			}
		}
	}
	s := strings.Join(strings.Fields(Plain(md)), " ")
	if r := []rune(s); len(r) > n {
		return strings.TrimSpace(string(r[:n])) + "…"
	}
	if cut {
		return s + "…"
	}
	return s
}
