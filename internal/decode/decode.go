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
	if field, ok := loneSurrogate(data); ok {
		return restarea.Errorf(restarea.CodeInvalidRequest, "request body contains an invalid \\u escape (lone surrogate) near %q", field)
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

// loneSurrogate finds a \uD800–\uDFFF escape that is not a valid pair.
// encoding/json would silently turn it into U+FFFD, which is a repair, and
// docs/contract.md §1 says invalid text is rejected, not repaired.
func loneSurrogate(data []byte) (string, bool) {
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
			return fmt.Sprintf("%s", data[i:i+6]), true
		case v >= 0xDC00 && v <= 0xDFFF:
			return fmt.Sprintf("%s", data[i:i+6]), true
		}
		i += 5
	}
	return "", false
}
