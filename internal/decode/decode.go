package decode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/restarea/restarea"

	"github.com/restarea/restarea/internal/jsonstr"
)

// JSON decodes one JSON object from data into v strictly: the bytes
// must be valid UTF-8 with no lone surrogate escapes, unknown fields and
// trailing data are refused, member names must match exactly (letter case
// included) and appear once, and a type mismatch names the field. Every
// failure is an *Error with CodeInvalidRequest. A JSON null is taken as an
// object with no members (v is left unchanged): MCP tool calls may send
// "arguments": null.
func JSON(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return restarea.Errorf(restarea.CodeInvalidRequest, "request body is empty; a JSON object is required")
	}
	if !utf8.Valid(data) {
		return restarea.Errorf(restarea.CodeInvalidRequest, "request body is not valid UTF-8")
	}
	if at, ok := loneSurrogate(data); ok {
		return surrogateError(data, at)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return restarea.Errorf(restarea.CodeInvalidRequest, "request body has data after the JSON object")
	}
	return exactKeys(data, reflect.TypeOf(v))
}

func jsonError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return restarea.Errorf(restarea.CodeInvalidRequest, "malformed JSON at byte %d: %s", syn.Offset, syn.Error())
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return restarea.Errorf(restarea.CodeInvalidRequest, "request body must be a JSON object, not %s", typ.Value)
		}
		return restarea.Errorf(restarea.CodeInvalidRequest, "%s must be %s, not %s", field, jsonTypeName(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return restarea.Errorf(restarea.CodeInvalidRequest, "malformed JSON: unexpected end of input")
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return restarea.Errorf(restarea.CodeInvalidRequest, "unknown field %s", f)
	}
	return restarea.Errorf(restarea.CodeInvalidRequest, "malformed JSON: %s", strings.TrimPrefix(msg, "json: "))
}

func jsonTypeName(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "struct", "map":
		return "an object"
	case "slice", "array":
		return "an array"
	case "bool":
		return "a boolean"
	default:
		return "a number"
	}
}

// loneSurrogate finds a \uD800–\uDFFF escape that is not a valid pair and
// returns its offset. encoding/json would silently turn it into U+FFFD,
// which is a repair, and docs/contract.md §1 says invalid text is
// rejected, not repaired.
func loneSurrogate(data []byte) (int, bool) {
	for i := 0; i+6 <= len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		if data[i+1] != 'u' {
			i++ // skip the escaped character, e.g. \\ or \"
			continue
		}
		v, ok := jsonstr.Hex4(data[i+2 : i+6])
		if !ok {
			continue
		}
		switch {
		case v >= 0xD800 && v <= 0xDBFF:
			if i+12 <= len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
				if w, ok := jsonstr.Hex4(data[i+8 : i+12]); ok && w >= 0xDC00 && w <= 0xDFFF {
					i += 11
					continue
				}
			}
			return i, true
		case v >= 0xDC00 && v <= 0xDFFF:
			return i, true
		}
		i += 5
	}
	return 0, false
}

// surrogateError is the answer to a lone surrogate escape at offset at:
// like a control character's, it names the field (its path, e.g.
// actor.name) and the position of the character in that text.
func surrogateError(data []byte, at int) error {
	esc := string(data[at : at+6])
	path, key, char := stringAt(data, at)
	what := path
	switch {
	case path == "" && key:
		what = "a member name"
	case key:
		what = "a member name in " + path
	case path == "":
		what = "the request body"
	}
	return restarea.Errorf(restarea.CodeInvalidRequest,
		"%s must not contain a lone surrogate escape (%s at character %d is half of a UTF-16 surrogate pair without its other half); send the character itself as UTF-8, or as a complete pair", what, esc, char)
}

// stringAt finds the JSON string holding offset at: the path of the value
// it is (members joined by dots, array elements as [i]), whether it is a
// member name instead, and the position (1-based, in characters) of the
// text at that offset within the string. The body is valid JSON but for
// the escape (encoding/json repairs it), so the tokens can be walked.
func stringAt(data []byte, at int) (path string, key bool, char int) {
	type frame struct {
		object  bool
		wantKey bool
		name    string
		index   int
	}
	var stack []frame
	join := func() string {
		var b strings.Builder
		for _, f := range stack {
			switch {
			case f.object && f.name != "":
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(f.name)
			case !f.object:
				fmt.Fprintf(&b, "[%d]", f.index)
			}
		}
		return b.String()
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		start := int(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return "", false, 1
		}
		end := int(dec.InputOffset())
		top := len(stack) - 1
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if top >= 0 && !stack[top].object {
					stack[top].index++
				}
				stack = append(stack, frame{object: t == '{', wantKey: t == '{', index: -1})
			default:
				stack = stack[:top]
				if top > 0 && stack[top-1].object {
					stack[top-1].wantKey = true
				}
			}
			continue
		case string:
			isKey := top >= 0 && stack[top].object && stack[top].wantKey
			if start <= at && at < end {
				q := bytes.IndexByte(data[start:end], '"') + start
				prefix, _ := jsonstr.Unquote(data[q+1 : at])
				if isKey {
					stack[top].name = "" // the previous member's
					return join(), true, utf8.RuneCount(prefix) + 1
				}
				if top >= 0 && !stack[top].object {
					stack[top].index++
				}
				return join(), false, utf8.RuneCount(prefix) + 1
			}
			if isKey {
				stack[top].name, stack[top].wantKey = t, false
				continue
			}
		}
		// A value ended: an object waits for its next member name, an
		// array counts its element.
		if top >= 0 {
			if stack[top].object {
				stack[top].wantKey = true
			} else {
				stack[top].index++
			}
		}
	}
}
