// Package jsonstr decodes JSON string contents exactly as encoding/json
// does, for the hand-written JSON readers that must agree with it: the
// request decoder's key check and the state machine's record reader.
package jsonstr

import (
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Unquote decodes the inside of a JSON string (without its quotes) as
// encoding/json does, including its repairs: an escaped lone surrogate
// and a byte that is not UTF-8 both become U+FFFD. It reports false, with
// what it decoded so far, at what encoding/json refuses: an escape JSON
// does not define, or a control character not escaped.
func Unquote(s []byte) ([]byte, bool) {
	b := make([]byte, 0, len(s))
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c == '\\':
			if r+1 >= len(s) {
				return b, false
			}
			switch e := s[r+1]; e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr, ok := escapeU(s[r:])
				if !ok {
					return b, false
				}
				r += 6
				if utf16.IsSurrogate(rr) {
					rr1, ok := escapeU(s[r:])
					if !ok {
						rr1 = -1
					}
					if dec := utf16.DecodeRune(rr, rr1); dec != unicode.ReplacementChar {
						r += 6
						b = utf8.AppendRune(b, dec)
						continue
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
				continue
			default:
				return b, false
			}
			r += 2
		case c < 0x20:
			return b, false
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			b = utf8.AppendRune(b, rr)
			r += size
		}
	}
	return b, true
}

// escapeU decodes a \uXXXX escape at the start of s.
func escapeU(s []byte) (rune, bool) {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return 0, false
	}
	return Hex4(s[2:6])
}

// Hex4 decodes four hexadecimal digits, either case.
func Hex4(b []byte) (rune, bool) {
	var v rune
	for _, c := range b {
		v <<= 4
		switch {
		case '0' <= c && c <= '9':
			v |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			v |= rune(c-'a') + 10
		case 'A' <= c && c <= 'F':
			v |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return v, true
}
