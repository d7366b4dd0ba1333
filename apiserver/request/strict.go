package request

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hyperfleet/hyperfleet/internal/jsonnum"
)

// MaxDepth bounds how deeply a request body may nest objects and arrays (the
// body's own object is level 1). Deeper documents are refused: stored JSON
// is later walked by the database's JSON functions, which have their own,
// lower-level limits.
const MaxDepth = 32

// strictError is a structural fault found before decoding.
type strictError struct {
	field, message string
}

// shape is what the destination type expects at one point of the document,
// so keys can be compared with the exact JSON names of struct fields.
type shape struct {
	kind   shapeKind
	fields map[string]*shape // struct: exact JSON names
	elem   *shape            // map value or slice element
}

type shapeKind int

const (
	shapeFree   shapeKind = iota // any JSON (json.RawMessage, interfaces, scalars)
	shapeStruct                  // keys must be exact field names
	shapeMap                     // any keys; values of elem's shape
	shapeSlice                   // elements of elem's shape
	shapeString                  // a Go string: null is not a string
)

var (
	shapeMu    sync.Mutex
	shapeCache = map[reflect.Type]*shape{}
	rawType    = reflect.TypeFor[json.RawMessage]()
)

func shapeOf(t reflect.Type) *shape {
	shapeMu.Lock()
	defer shapeMu.Unlock()
	return buildShape(t, map[reflect.Type]*shape{})
}

func buildShape(t reflect.Type, building map[reflect.Type]*shape) *shape {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s, ok := shapeCache[t]; ok {
		return s
	}
	if s, ok := building[t]; ok {
		return s
	}
	s := &shape{}
	building[t] = s
	switch {
	case t == rawType:
	case t.Kind() == reflect.String:
		s.kind = shapeString
	case t.Kind() == reflect.Struct:
		s.kind = shapeStruct
		s.fields = map[string]*shape{}
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			s.fields[name] = buildShape(f.Type, building)
		}
	case t.Kind() == reflect.Map:
		s.kind, s.elem = shapeMap, buildShape(t.Elem(), building)
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		s.kind, s.elem = shapeSlice, buildShape(t.Elem(), building)
	}
	shapeCache[t] = s
	return s
}

// checkStrict walks the document once and refuses what encoding/json would
// quietly accept: nesting deeper than MaxDepth, duplicate keys (the last one
// would win), keys that match a field only case-insensitively, invalid UTF-8
// or lone surrogates in strings (they would be replaced), NUL characters
// (PostgreSQL cannot store them in JSON), numbers that the backends would
// not store or search alike (jsonnum.Check), and null where a string is
// expected inside a map (a null label value would become ""). Syntax errors
// are left to the decoder, whose messages already name them: checkStrict
// then returns nil.
func checkStrict(body []byte, dst any) *strictError {
	w := walker{body: body, dec: json.NewDecoder(bytes.NewReader(body))}
	w.dec.UseNumber()
	ok, serr := w.value(shapeOf(reflect.TypeOf(dst)), "", 0, false)
	if !ok {
		return nil
	}
	return serr
}

type walker struct {
	body []byte
	dec  *json.Decoder
}

// token reads the next token and the raw bytes it came from (with any
// separators before it, which are ASCII).
func (w *walker) token() (json.Token, []byte, bool) {
	start := w.dec.InputOffset()
	tok, err := w.dec.Token()
	if err != nil {
		return nil, nil, false
	}
	return tok, w.body[start:w.dec.InputOffset()], true
}

// value checks one JSON value. ok is false when the input is not valid JSON.
func (w *walker) value(s *shape, path string, depth int, inMap bool) (ok bool, serr *strictError) {
	tok, raw, ok := w.token()
	if !ok {
		return false, nil
	}
	switch v := tok.(type) {
	case nil:
		if inMap && s.kind == shapeString {
			return true, &strictError{path, fmt.Sprintf("%s must be a string, not null", display(path))}
		}
	case string:
		if msg := badString(raw); msg != "" {
			return true, &strictError{path, fmt.Sprintf("%s %s", display(path), msg)}
		}
	case json.Number:
		if err := jsonnum.Check(string(v)); err != nil {
			return true, &strictError{path, fmt.Sprintf("%s: the number %s %s", display(path), shortNumber(string(v)), err)}
		}
	case json.Delim:
		if v == '{' || v == '[' {
			if depth+1 > MaxDepth {
				return true, &strictError{topField(path), fmt.Sprintf("%s nests objects and arrays more than %d levels deep; the limit is %d", display(topField(path)), MaxDepth, MaxDepth)}
			}
		}
		switch v {
		case '{':
			return w.object(s, path, depth+1)
		case '[':
			return w.array(s, path, depth+1)
		}
	}
	return true, nil
}

func (w *walker) object(s *shape, path string, depth int) (bool, *strictError) {
	seen := map[string]bool{}
	for w.dec.More() {
		tok, raw, ok := w.token()
		if !ok {
			return false, nil
		}
		key, _ := tok.(string)
		if msg := badString(raw); msg != "" {
			return true, &strictError{orBody(path), fmt.Sprintf("a key of %s %s", display(orBody(path)), msg)}
		}
		child := join(path, key)
		if seen[key] {
			return true, &strictError{child, fmt.Sprintf("%s appears twice; send each key once", display(child))}
		}
		seen[key] = true
		var next *shape
		switch s.kind {
		case shapeStruct:
			next = s.fields[key]
			if next == nil {
				for name := range s.fields {
					if strings.EqualFold(name, key) {
						return true, &strictError{child, fmt.Sprintf("unknown field %q: field names are case-sensitive, use %q", key, name)}
					}
				}
				return true, &strictError{child, fmt.Sprintf("unknown field %q", key)}
			}
		case shapeMap:
			next = s.elem
		default:
			next = &shape{}
		}
		if ok, serr := w.value(next, child, depth, s.kind == shapeMap); !ok || serr != nil {
			return ok, serr
		}
	}
	if _, _, ok := w.token(); !ok { // '}'
		return false, nil
	}
	return true, nil
}

func (w *walker) array(s *shape, path string, depth int) (bool, *strictError) {
	next := &shape{}
	if s.kind == shapeSlice {
		next = s.elem
	}
	for i := 0; w.dec.More(); i++ {
		if ok, serr := w.value(next, path+"["+strconv.Itoa(i)+"]", depth, false); !ok || serr != nil {
			return ok, serr
		}
	}
	if _, _, ok := w.token(); !ok { // ']'
		return false, nil
	}
	return true, nil
}

// badString inspects the raw spelling of a string token: invalid UTF-8 and
// escapes that decode to NUL or to half of a surrogate pair are refused,
// because encoding/json would silently replace them (and PostgreSQL refuses
// \u0000 in JSON).
func badString(raw []byte) string {
	if !utf8.Valid(raw) {
		return "is not valid UTF-8"
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' || i+1 >= len(raw) {
			continue
		}
		if raw[i+1] != 'u' {
			i++ // skip the escaped character, which may be a backslash
			continue
		}
		r, ok := hex4(raw, i+2)
		if !ok {
			return "" // a syntax error: the decoder reports it
		}
		switch {
		case r == 0:
			return `holds \u0000 (NUL), which cannot be stored`
		case r >= 0xDC00 && r <= 0xDFFF:
			return "holds a lone low surrogate escape; send valid UTF-16 pairs or plain UTF-8"
		case r >= 0xD800 && r <= 0xDBFF:
			lo, ok := rune(0), false
			if i+7 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
				lo, ok = hex4(raw, i+8)
			}
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return "holds a lone high surrogate escape; send valid UTF-16 pairs or plain UTF-8"
			}
			i += 11
			continue
		}
		i += 5
	}
	return ""
}

// shortNumber shows a refused number in a message: its start and length
// when it is long.
func shortNumber(n string) string {
	if len(n) <= 40 {
		return n
	}
	return fmt.Sprintf("%s... (%d characters)", n[:32], len(n))
}

func hex4(raw []byte, at int) (rune, bool) {
	if at+4 > len(raw) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(raw[at:at+4]), 16, 32)
	return rune(n), err == nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// topField is the first segment of a path: the body field a too-deep
// document sits in (the full path could be long).
func topField(path string) string {
	if i := strings.IndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return path
}

func orBody(path string) string {
	if path == "" {
		return "(body)"
	}
	return path
}

// display shortens a path for a message; the field itself is reported in
// full in the problem's errors.
func display(path string) string {
	if path == "" {
		return "the request body"
	}
	const shown = 120
	if len(path) > shown {
		return path[:shown] + "..."
	}
	return path
}
