package decode

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/restarea/restarea"

	"github.com/restarea/restarea/internal/jsonstr"
)

// exactKeys refuses what encoding/json lets through: a member whose name
// matches a field only when letter case is ignored ({"BODY": ...}), and a
// member given twice (the decoder keeps the last one silently). It runs
// after a successful decode, so data is known to be well-formed; anything
// unexpected ends the walk with nil rather than a second opinion on syntax.
//
// It scans the bytes directly instead of using json.Decoder.Token: it runs
// on every request and the token stream, with a map per object, was a
// visible share of the cluster's CPU. Nothing is allocated unless a member
// name holds an escape, an object has many members, or a key is refused.
func exactKeys(data []byte, t reflect.Type) error {
	s := keyScanner{data: data}
	if ke, ok := s.value(t).(*keyError); ok {
		return ke.toError()
	}
	return nil
}

// maxKeyDepth is encoding/json's nesting limit, so every document that
// decoded is walked in full, while the recursion stays bounded on any input.
const maxKeyDepth = 10000

// seenInline is how many member names an object keeps on the stack before
// duplicates are looked up in a map; request objects have far fewer.
const seenInline = 16

// errStopKeys ends the walk on bytes the scanner does not expect; exactKeys
// turns it into nil, since the decoder has already judged the syntax.
var errStopKeys = errors.New("exactKeys: unexpected input")

// keyError is a refused member on its way out of the recursion. The path is
// collected while unwinding so that the common case never builds one.
type keyError struct {
	twice bool
	segs  []string // member names, innermost first
}

func (e *keyError) Error() string { return e.name() }

// name joins the member names the way the token walk did: an empty prefix
// takes no dot, so {"":{"x":...}} is reported as x, not .x.
func (e *keyError) name() string {
	name := ""
	for i := len(e.segs) - 1; i >= 0; i-- {
		if name != "" {
			name += "." + e.segs[i]
		} else {
			name = e.segs[i]
		}
	}
	return name
}

func (e *keyError) toError() error {
	if e.twice {
		return restarea.Errorf(restarea.CodeInvalidRequest, "%s is given twice", e.name())
	}
	return restarea.Errorf(restarea.CodeInvalidRequest, "unknown field %q (field names are case-sensitive)", e.name())
}

type keyScanner struct {
	data  []byte
	pos   int
	depth int
}

func (s *keyScanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// value walks one JSON value of Go type t (nil when unknown).
func (s *keyScanner) value(t reflect.Type) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	s.skipSpace()
	if s.pos >= len(s.data) {
		return errStopKeys
	}
	switch c := s.data[s.pos]; {
	case c == '{':
		return s.object(t)
	case c == '[':
		return s.array(t)
	case c == '"':
		if _, ok := s.str(); !ok {
			return errStopKeys
		}
		return nil
	default:
		// Numbers and literals: their bytes never delimit anything.
		start := s.pos
		for s.pos < len(s.data) && isLiteralByte(s.data[s.pos]) {
			s.pos++
		}
		if s.pos == start {
			return errStopKeys
		}
		return nil
	}
}

func isLiteralByte(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || 'A' <= c && c <= 'Z'
}

// str consumes the string starting at s.pos (a quote) and returns the bytes
// between the quotes, still escaped.
func (s *keyScanner) str() ([]byte, bool) {
	start := s.pos + 1
	i := start
	for {
		q := bytes.IndexByte(s.data[i:], '"')
		if q < 0 {
			return nil, false
		}
		i += q
		// The quote is escaped when an odd run of backslashes precedes it;
		// the opening quote bounds the run.
		n := 0
		for j := i - 1; j >= start && s.data[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			s.pos = i + 1
			return s.data[start:i], true
		}
		i++
	}
}

func (s *keyScanner) object(t reflect.Type) error {
	s.depth++
	if s.depth > maxKeyDepth {
		return errStopKeys
	}
	s.pos++ // '{'
	fields := jsonFields(t)
	var inline [seenInline][]byte
	seen := inline[:0]
	var seenMap map[string]struct{}
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		s.depth--
		return nil
	}
	for {
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return errStopKeys
		}
		raw, ok := s.str()
		if !ok {
			return errStopKeys
		}
		key := raw
		if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
			// Compared as the decoder saw them, so "b\u006fdy" is body.
			key = unquoteKey(raw)
		}
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return errStopKeys
		}
		s.pos++
		var ft reflect.Type
		if fields != nil {
			var known bool
			if ft, known = fields[string(key)]; !known {
				return &keyError{segs: []string{string(key)}}
			}
		}
		if seenMap != nil {
			if _, dup := seenMap[string(key)]; dup {
				return &keyError{twice: true, segs: []string{string(key)}}
			}
			seenMap[string(key)] = struct{}{}
		} else {
			for _, k := range seen {
				if bytes.Equal(k, key) {
					return &keyError{twice: true, segs: []string{string(key)}}
				}
			}
			if len(seen) < seenInline {
				seen = append(seen, key)
			} else {
				// Past a handful of members a linear search turns quadratic.
				seenMap = make(map[string]struct{}, 2*seenInline)
				for _, k := range seen {
					seenMap[string(k)] = struct{}{}
				}
				seenMap[string(key)] = struct{}{}
			}
		}
		if err := s.value(ft); err != nil {
			if ke, ok := err.(*keyError); ok {
				ke.segs = append(ke.segs, string(key))
			}
			return err
		}
		if done, err := s.separator('}'); done || err != nil {
			return err
		}
	}
}

// separator consumes what follows a member or an element: a comma, or
// the close of its object or array (done).
func (s *keyScanner) separator(close byte) (done bool, err error) {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return false, errStopKeys
	}
	switch s.data[s.pos] {
	case ',':
		s.pos++
		return false, nil
	case close:
		s.pos++
		s.depth--
		return true, nil
	}
	return false, errStopKeys
}

func (s *keyScanner) array(t reflect.Type) error {
	s.depth++
	if s.depth > maxKeyDepth {
		return errStopKeys
	}
	s.pos++ // '['
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		s.depth--
		return nil
	}
	for {
		// An element adds nothing to the path: the token walk named a
		// member of actors[0] just actors.name.
		if err := s.value(elem); err != nil {
			return err
		}
		if done, err := s.separator(']'); done || err != nil {
			return err
		}
	}
}

// unquoteKey decodes the inside of a JSON string exactly as encoding/json
// does, including its repairs, so that names compare as the decoder saw
// them. The input was already accepted by the decoder, so it is never
// malformed.
func unquoteKey(s []byte) []byte {
	b, _ := jsonstr.Unquote(s)
	return b
}

// fieldCache holds jsonFields per struct type: reflection over a type's
// fields is the same on every request, so it runs once.
var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// jsonFields maps the JSON member names of a struct type to their types;
// nil for anything but a struct (its member names are not checked). A
// struct with no exported fields gives an empty, non-nil map: every member
// is unknown. The result is shared and must not be modified.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m, _ := fieldCache.LoadOrStore(t, buildJSONFields(t))
	return m.(map[string]reflect.Type)
}

func buildJSONFields(t reflect.Type) map[string]reflect.Type {
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			// Only a struct embedded by value is flattened, as before.
			for k, v := range buildJSONFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
