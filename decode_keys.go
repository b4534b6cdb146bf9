package restarea

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
)

// exactKeys refuses what encoding/json lets through: a member whose name
// matches a field only when letter case is ignored ({"BODY": ...}), and a
// member given twice (the decoder keeps the last one silently). It runs
// after a successful decode, so data is known to be well-formed.
func exactKeys(data []byte, t reflect.Type) error {
	return walkKeys(json.NewDecoder(bytes.NewReader(data)), t, "")
}

func walkKeys(dec *json.Decoder, t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return nil
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch delim {
	case '{':
		fields := jsonFields(t)
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil
			}
			key, _ := kt.(string)
			name := key
			if path != "" {
				name = path + "." + key
			}
			var ft reflect.Type
			if fields != nil {
				var known bool
				if ft, known = fields[key]; !known {
					return Errorf(CodeInvalidRequest, "unknown field %q (field names are case-sensitive)", name)
				}
			}
			if seen[key] {
				return Errorf(CodeInvalidRequest, "%s is given twice", name)
			}
			seen[key] = true
			if err := walkKeys(dec, ft, name); err != nil {
				return err
			}
		}
		dec.Token() // '}'
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if err := walkKeys(dec, elem, path); err != nil {
				return err
			}
		}
		dec.Token() // ']'
	}
	return nil
}

// jsonFields maps the JSON member names of a struct type to their types;
// nil for anything but a struct (its member names are not checked).
func jsonFields(t reflect.Type) map[string]reflect.Type {
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
			for k, v := range jsonFields(f.Type) {
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
