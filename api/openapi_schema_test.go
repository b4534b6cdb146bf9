package api_test

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// oaDoc is the OpenAPI document as JSON values: objects are
// map[string]any, numbers json.Number. It validates values against the
// subset of JSON Schema 2020-12 (the dialect of OpenAPI 3.1) that
// api/openapi.yaml uses; a keyword outside that subset is an error, so
// the document cannot start relying on a check this validator skips.
type oaDoc struct {
	root map[string]any
}

// oaAnnotations are keywords that describe and never constrain.
var oaAnnotations = map[string]bool{
	"description": true, "summary": true, "title": true, "default": true, "examples": true,
	"example": true, "deprecated": true, "contentMediaType": true,
}

// oaUUID is a UUID in canonical text form, in any letter case.
var oaUUID = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// resolve follows a local reference "#/a/b/c" (JSON Pointer, with ~0
// and ~1 escapes).
func (d oaDoc) resolve(ref string) (any, error) {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, fmt.Errorf("$ref %q is not local (#/...)", ref)
	}
	var cur any = d.root
	for _, part := range strings.Split(p, "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("$ref %q: %q is inside a non-object", ref, part)
		}
		if cur, ok = m[part]; !ok {
			return nil, fmt.Errorf("$ref %q: no member %q", ref, part)
		}
	}
	return cur, nil
}

// deref returns v, or what it refers to when it is a {"$ref": ...}
// object (references to references are followed).
func (d oaDoc) deref(v any) (map[string]any, error) {
	for range 16 {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%v is not an object", v)
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return m, nil
		}
		if v, ok = d.resolveOK(ref); !ok {
			return nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
	}
	return nil, fmt.Errorf("a $ref chain longer than 16")
}

func (d oaDoc) resolveOK(ref string) (any, bool) {
	v, err := d.resolve(ref)
	return v, err == nil
}

// validate checks value against schema and returns every violation, each
// naming where in value it is.
func (d oaDoc) validate(schema, value any) []string {
	var errs []string
	d.check(schema, value, "$", &errs)
	return errs
}

func (d oaDoc) check(schema, value any, at string, errs *[]string) {
	fail := func(format string, args ...any) {
		*errs = append(*errs, at+": "+fmt.Sprintf(format, args...))
	}
	switch s := schema.(type) {
	case bool:
		if !s {
			fail("no value is allowed here")
		}
		return
	case map[string]any:
		keys := make([]string, 0, len(s))
		for k := range s {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			d.keyword(s, k, value, at, errs, fail)
		}
	default:
		fail("schema %v is neither an object nor a boolean", schema)
	}
}

// keyword applies one keyword of schema s to value.
func (d oaDoc) keyword(s map[string]any, k string, value any, at string, errs *[]string, fail func(string, ...any)) {
	if oaAnnotations[k] || strings.HasPrefix(k, "x-") {
		return
	}
	arg := s[k]
	switch k {
	case "$ref":
		target, err := d.resolve(arg.(string))
		if err != nil {
			fail("%v", err)
			return
		}
		d.check(target, value, at, errs)
	case "type":
		types, ok := arg.([]any)
		if !ok {
			types = []any{arg}
		}
		for _, t := range types {
			if oaIsType(t.(string), value) {
				return
			}
		}
		fail("%s is not of type %v", oaShow(value), arg)
	case "enum":
		for _, e := range arg.([]any) {
			if oaEqual(e, value) {
				return
			}
		}
		fail("%s is not one of %v", oaShow(value), arg)
	case "const":
		if !oaEqual(arg, value) {
			fail("%s is not %v", oaShow(value), arg)
		}
	case "properties":
		obj, ok := value.(map[string]any)
		if !ok {
			return
		}
		for name, sub := range arg.(map[string]any) {
			if v, ok := obj[name]; ok {
				d.check(sub, v, at+"."+name, errs)
			}
		}
	case "required":
		obj, ok := value.(map[string]any)
		if !ok {
			return
		}
		for _, name := range arg.([]any) {
			if _, ok := obj[name.(string)]; !ok {
				fail("required member %q is missing", name)
			}
		}
	case "additionalProperties":
		obj, ok := value.(map[string]any)
		if !ok {
			return
		}
		props, _ := s["properties"].(map[string]any)
		for name, v := range obj {
			if _, known := props[name]; !known {
				d.check(arg, v, at+"."+name, errs)
			}
		}
	case "minProperties":
		if obj, ok := value.(map[string]any); ok && len(obj) < oaInt(arg) {
			fail("has %d members, fewer than %d", len(obj), oaInt(arg))
		}
	case "items":
		arr, ok := value.([]any)
		if !ok {
			return
		}
		for i, v := range arr {
			d.check(arg, v, at+"["+strconv.Itoa(i)+"]", errs)
		}
	case "minLength", "maxLength":
		str, ok := value.(string)
		if !ok {
			return
		}
		// JSON Schema counts characters (code points), as the API does.
		n := utf8.RuneCountInString(str)
		if k == "minLength" && n < oaInt(arg) || k == "maxLength" && n > oaInt(arg) {
			fail("%d characters, outside the %s %d", n, k, oaInt(arg))
		}
	case "minimum", "maximum":
		num, ok := value.(json.Number)
		if !ok {
			return
		}
		f, _ := num.Float64()
		bound, _ := arg.(json.Number).Float64()
		if k == "minimum" && f < bound || k == "maximum" && f > bound {
			fail("%s is outside the %s %v", num, k, arg)
		}
	case "pattern":
		str, ok := value.(string)
		if !ok {
			return
		}
		re, err := regexp.Compile(arg.(string))
		if err != nil {
			fail("pattern %q: %v", arg, err)
			return
		}
		if !re.MatchString(str) {
			fail("%q does not match %s", str, arg)
		}
	case "format":
		str, ok := value.(string)
		if !ok {
			return
		}
		switch arg {
		case "uuid":
			if !oaUUID.MatchString(str) {
				fail("%q is not a UUID", str)
			}
		case "date-time":
			if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
				fail("%q is not an RFC 3339 date-time", str)
			}
		default:
			fail("format %q is not one this validator knows", arg)
		}
	case "oneOf", "anyOf":
		matched := 0
		var why []string
		for i, sub := range arg.([]any) {
			var subErrs []string
			d.check(sub, value, at, &subErrs)
			if len(subErrs) == 0 {
				matched++
			} else {
				why = append(why, fmt.Sprintf("[%d] %s", i, strings.Join(subErrs, "; ")))
			}
		}
		if matched == 0 || k == "oneOf" && matched > 1 {
			fail("%s: %d subschemas match (%s)", k, matched, strings.Join(why, " | "))
		}
	default:
		fail("schema keyword %q is not one this validator knows", k)
	}
}

// oaIsType reports whether v is of the JSON Schema type t.
func oaIsType(t string, v any) bool {
	switch t {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		f, err := n.Float64()
		return err == nil && f == math.Trunc(f)
	}
	return false
}

// oaEqual compares two JSON values, numbers by value.
func oaEqual(a, b any) bool {
	na, aNum := a.(json.Number)
	nb, bNum := b.(json.Number)
	if aNum || bNum {
		if !aNum || !bNum {
			return false
		}
		fa, _ := na.Float64()
		fb, _ := nb.Float64()
		return fa == fb
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func oaInt(v any) int {
	n, _ := v.(json.Number).Int64()
	return int(n)
}

func oaShow(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// oaJSON decodes JSON text into the values oaDoc validates.
func oaJSON(b []byte) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}
