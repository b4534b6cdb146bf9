package restarea

import (
	"fmt"
	"strings"
)

// IsControl reports whether r is a control character that no text field
// may hold (docs/contract.md §1): a C0 control other than "\n" and "\t", or DEL.
// "\r" counts as one too, but NormalizeText has turned every "\r" into
// "\n" before the check runs, so a client may still send it.
func IsControl(r rune) bool {
	return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f
}

// IsBidiControl reports whether r is one of the explicit bidirectional
// formatting characters that change the order text is shown in beyond
// their own span: the embeddings and overrides U+202A–U+202E and the
// isolates U+2066–U+2069. A U+202E in a name can make "gpt-4" show as
// another name; actor fields refuse them and pages strip them from every
// displayed field but the body (see web.DESIGN.md).
func IsBidiControl(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// checkControls refuses a control character in s, naming field and the
// character's position (in characters, from 1) so a client can find it.
func checkControls(field, s string, bidi bool) *Error {
	n := 0
	for _, r := range s {
		n++
		switch {
		case IsControl(r):
			return invalid(field, fmt.Sprintf("must not contain control characters (%U at character %d; only \\n and \\t are allowed)", r, n))
		case bidi && IsBidiControl(r):
			return invalid(field, fmt.Sprintf("must not contain bidirectional formatting characters (%U at character %d)", r, n))
		}
	}
	return nil
}

// DisplayText returns s as pages show a title or an actor field: bidi
// formatting characters removed, so that a name cannot reorder what
// surrounds it, and control characters (of entries stored before they
// were refused) replaced by U+FFFD.
func DisplayText(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return IsControl(r) || IsBidiControl(r) }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case IsBidiControl(r):
		case IsControl(r):
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// DisplayBody returns a body as pages show it: control characters replaced
// by U+FFFD, so that an ESC stored before they were refused cannot drive a
// terminal that prints the Markdown. Bidi characters stay: they are part
// of right-to-left writing, and a body is shown as a block of its own.
func DisplayBody(s string) string {
	if !strings.ContainsFunc(s, IsControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}
