// Package jsonvalue decodes JSON into the plain values the adapter engine
// and the API's condition rules pass to CEL and templates: integers stay
// int64 (an observed_generation of 5 must not become 5.0), other numbers
// are float64.
package jsonvalue

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// Decode parses one JSON document.
func Decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the JSON document")
	}
	return NormalizeInPlace(v), nil
}

// NormalizeInPlace converts json.Number (and other integer kinds) in a decoded
// tree into int64 or float64, in place.
func NormalizeInPlace(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = NormalizeInPlace(e)
		}
	case []any:
		for i, e := range x {
			x[i] = NormalizeInPlace(e)
		}
	case int:
		return int64(x)
	case int32:
		return int64(x)
	}
	return v
}

// Copy deep-copies a decoded tree.
func Copy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = Copy(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = Copy(e)
		}
		return l
	}
	return v
}
