package restarea

import (
	"fmt"
	"strings"
	"unicode"
)

// IsInvisible reports whether r is a character people cannot see but
// models read: a format character (Unicode category Cf: the zero-width
// space U+200B and joiners U+200C and U+200D, the word joiner U+2060, the
// marks U+200E, U+200F and U+061C, U+FEFF, the tag characters
// U+E0000–U+E007F, the soft hyphen, the bidi controls), or a blank filler
// that renders as nothing (U+115F, U+1160, U+3164, U+FFA0). The Arabic
// number signs, format characters with a glyph of their own, are not.
func IsInvisible(r rune) bool {
	switch r {
	case 0x115f, 0x1160, 0x3164, 0xffa0:
		return true
	}
	return r > 0x7f && unicode.Is(unicode.Cf, r) && !unicode.Is(unicode.Prepended_Concatenation_Mark, r)
}

// isVariationSelector reports U+FE00–U+FE0F and U+E0100–U+E01EF, which
// choose a glyph for the character before them (U+FE0F: as an emoji).
func isVariationSelector(r rune) bool {
	return r >= 0xfe00 && r <= 0xfe0f || r >= 0xe0100 && r <= 0xe01ef
}

func isTag(r rune) bool { return r >= 0xe0000 && r <= 0xe007f }

// ShowInvisible returns s as pages that people read show it: each
// invisible character (IsInvisible) replaced by a visible marker naming
// it, "⟨U+200B⟩", and a run of tag characters by the text it spells,
// "⟨tags: hello⟩", so that a reader sees what a model reading the same
// text would. It changes what is displayed only: stored text, the API,
// MCP and the Markdown export keep the characters.
//
// Kept as they are, because writing needs them and they show: the bidi
// controls (IsBidiControl; DisplayText strips them from titles and actor
// fields, bodies keep them for right-to-left writing); a joiner (U+200C,
// U+200D) between two visible non-ASCII characters (emoji sequences,
// Persian and Indic scripts); tag characters right after U+1F3F4 (the
// flags of Scotland, Wales, England); and one variation selector after a
// visible character (U+FE0F of emoji) — a second in a row, a known way
// to hide data, is marked.
func ShowInvisible(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return IsInvisible(r) || isVariationSelector(r) }) {
		return s
	}
	rs := []rune(s)
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case isTag(r):
			j := i
			for j < len(rs) && isTag(rs[j]) {
				j++
			}
			if i > 0 && rs[i-1] == 0x1f3f4 {
				b.WriteString(string(rs[i:j]))
			} else {
				writeTags(&b, rs[i:j])
			}
			i = j - 1
		case IsBidiControl(r), (r == 0x200c || r == 0x200d) && joins(rs, i):
			b.WriteRune(r)
		case IsInvisible(r):
			fmt.Fprintf(&b, "⟨U+%04X⟩", r)
		case isVariationSelector(r) && (i == 0 || !visible(rs[i-1])):
			fmt.Fprintf(&b, "⟨U+%04X⟩", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// visible reports a character a variation selector or a joiner may
// follow: not a space, not invisible, not itself a selector.
func visible(r rune) bool {
	return !unicode.IsSpace(r) && !IsInvisible(r) && !isVariationSelector(r)
}

// joins reports whether the joiner at rs[i] sits between two visible
// non-ASCII characters (a variation selector or emoji modifier may come
// before it: "🏳️‍🌈").
func joins(rs []rune, i int) bool {
	if i == 0 || i == len(rs)-1 {
		return false
	}
	prev, next := rs[i-1], rs[i+1]
	prevOK := prev > 0x7f && (visible(prev) || isVariationSelector(prev) && i >= 2 && visible(rs[i-2]))
	return prevOK && next > 0x7f && visible(next)
}

// writeTags writes a run of tag characters as the ASCII text they spell;
// the ones without a letter (U+E0001, U+E007F, ...) by their code point.
func writeTags(b *strings.Builder, tags []rune) {
	b.WriteString("⟨tags: ")
	for _, t := range tags {
		if c := t - 0xe0000; c >= 0x20 && c <= 0x7e {
			b.WriteRune(c)
		} else {
			fmt.Fprintf(b, "U+%04X", t)
		}
	}
	b.WriteString("⟩")
}
