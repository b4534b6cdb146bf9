package web

import (
	"html/template"
	"regexp"
	"strings"
)

// renderBlocks converts the small Markdown subset the guide is written in
// to HTML: headings (#, ##, ### with an optional trailing {#id}), paragraphs,
// "- " and "1. " lists, fenced code blocks, and inline `code`, **strong**
// and [links](/path). It is for the site's own text only; entries are never
// rendered, only escaped. Even so every character of the source is
// escaped, so a stray "<" in the guide stays a "<".
func renderBlocks(src string) template.HTML {
	var b strings.Builder
	var para []string
	list := "" // "ul", "ol" or "" when no list is open
	var code []string
	inCode := false

	flushPara := func() {
		if len(para) > 0 {
			b.WriteString("<p>" + inline(strings.Join(para, " ")) + "</p>\n")
			para = nil
		}
	}
	closeList := func() {
		if list != "" {
			b.WriteString("</li>\n</" + list + ">\n")
			list = ""
		}
	}
	item := func(kind, text string) {
		flushPara()
		if list != kind {
			closeList()
			b.WriteString("<" + kind + ">\n<li>")
			list = kind
		} else {
			b.WriteString("</li>\n<li>")
		}
		b.WriteString(inline(text))
	}

	for _, line := range strings.Split(src, "\n") {
		if inCode {
			if strings.HasPrefix(line, "```") {
				b.WriteString("<pre><code>" + template.HTMLEscapeString(strings.Join(code, "\n")) + "</code></pre>\n")
				code, inCode = nil, false
				continue
			}
			code = append(code, line)
			continue
		}
		switch {
		case strings.HasPrefix(line, "```"):
			flushPara()
			closeList()
			inCode = true
		case strings.TrimSpace(line) == "":
			flushPara()
			closeList()
		case strings.HasPrefix(line, "#"):
			flushPara()
			closeList()
			b.WriteString(heading(line))
		case strings.HasPrefix(line, "- "):
			item("ul", line[2:])
		case orderedItem.MatchString(line):
			item("ol", orderedItem.ReplaceAllString(line, ""))
		case list != "" && strings.HasPrefix(line, "  "):
			// A continuation of the open list item.
			b.WriteString(" " + inline(strings.TrimSpace(line)))
		default:
			closeList()
			para = append(para, line)
		}
	}
	if inCode {
		b.WriteString("<pre><code>" + template.HTMLEscapeString(strings.Join(code, "\n")) + "</code></pre>\n")
	}
	flushPara()
	closeList()
	return template.HTML(b.String())
}

var (
	orderedItem = regexp.MustCompile(`^[0-9]+\. `)
	headingLine = regexp.MustCompile(`^(#{1,3}) (.*?)(?: \{#([a-z0-9-]+)\})?$`)
	inlineSpan  = regexp.MustCompile("`([^`]+)`|\\*\\*([^*]+)\\*\\*|\\[([^\\]]+)\\]\\(([^)\\s]+)\\)")
)

// heading renders one heading line; a line that is not a heading after
// all becomes a paragraph.
func heading(line string) string {
	m := headingLine.FindStringSubmatch(line)
	if m == nil {
		return "<p>" + inline(line) + "</p>\n"
	}
	tag := "h" + string(rune('0'+len(m[1])))
	id := ""
	if m[3] != "" {
		id = ` id="` + m[3] + `"`
	}
	return "<" + tag + id + ">" + inline(m[2]) + "</" + tag + ">\n"
}

// inline renders code spans, strong text and links; everything else is
// escaped text. A link whose target is not a site path, a fragment or an
// http(s) address is shown as text.
func inline(s string) string {
	var b strings.Builder
	last := 0
	for _, m := range inlineSpan.FindAllStringSubmatchIndex(s, -1) {
		b.WriteString(template.HTMLEscapeString(s[last:m[0]]))
		last = m[1]
		switch {
		case m[2] >= 0:
			b.WriteString("<code>" + template.HTMLEscapeString(s[m[2]:m[3]]) + "</code>")
		case m[4] >= 0:
			b.WriteString("<strong>" + template.HTMLEscapeString(s[m[4]:m[5]]) + "</strong>")
		default:
			text, href := s[m[6]:m[7]], s[m[8]:m[9]]
			if !safeHref(href) {
				b.WriteString(template.HTMLEscapeString(s[m[0]:m[1]]))
				continue
			}
			b.WriteString(`<a href="` + template.HTMLEscapeString(href) + `">` + template.HTMLEscapeString(text) + "</a>")
		}
	}
	b.WriteString(template.HTMLEscapeString(s[last:]))
	return b.String()
}

func safeHref(h string) bool {
	return strings.HasPrefix(h, "/") && !strings.HasPrefix(h, "//") ||
		strings.HasPrefix(h, "#") ||
		strings.HasPrefix(h, "https://") || strings.HasPrefix(h, "http://")
}
