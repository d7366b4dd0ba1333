// Decoding of the stored label and condition documents without reflection.
// Every resource read decodes both, and encoding/json's reflective decoder
// was the largest single cost of serving a page (docs/benchmarks.md). The
// documents are the API's own writing (PostgreSQL's jsonb gives them back
// with spaces and its own key order), so a small parser of exactly that
// shape serves them; anything else (escapes, numbers with exponents,
// unknown keys, null) goes to encoding/json, which stays the reference.

package store

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/hyperfleet/hyperfleet/resource"
)

var colon = []byte{':'}

// decodeLabels decodes a stored label object.
func decodeLabels(b []byte) (map[string]string, error) {
	if m, ok := scanLabels(b); ok {
		return m, nil
	}
	var m map[string]string
	err := json.Unmarshal(b, &m)
	return m, err
}

// decodeConditions decodes a stored condition list.
func decodeConditions(b []byte) ([]resource.Condition, error) {
	if c, ok := scanConditions(b); ok {
		return c, nil
	}
	var c []resource.Condition
	err := json.Unmarshal(b, &c)
	return c, err
}

// scanner reads the plain subset of JSON the stored documents use; a false
// result from any method means "not plain: use encoding/json".
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next consumes c, after any space.
func (s *scanner) next(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// peek reports whether c is next, after any space, without consuming it.
func (s *scanner) peek(c byte) bool {
	s.space()
	return s.i < len(s.b) && s.b[s.i] == c
}

// raw reads a string without escapes or control characters, in valid
// UTF-8, returning its bytes (valid until the document changes).
func (s *scanner) raw() ([]byte, bool) {
	if !s.next('"') {
		return nil, false
	}
	start, ascii := s.i, true
	for ; s.i < len(s.b); s.i++ {
		c := s.b[s.i]
		switch {
		case c == '"':
			v := s.b[start:s.i]
			s.i++
			return v, ascii || utf8.Valid(v)
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// str reads a string as raw does.
func (s *scanner) str() (string, bool) {
	v, ok := s.raw()
	return string(v), ok
}

// word reads a string that is usually one of the contract's condition
// types or statuses, sharing their one copy instead of allocating.
func (s *scanner) word() (string, bool) {
	v, ok := s.raw()
	if !ok {
		return "", false
	}
	switch string(v) {
	case string(resource.StatusTrue):
		return string(resource.StatusTrue), true
	case string(resource.StatusFalse):
		return string(resource.StatusFalse), true
	case string(resource.StatusUnknown):
		return string(resource.StatusUnknown), true
	case resource.ConditionReady:
		return resource.ConditionReady, true
	case resource.ConditionReconciled:
		return resource.ConditionReconciled, true
	case resource.ConditionAvailable:
		return resource.ConditionAvailable, true
	case resource.ConditionLastKnownReconciled:
		return resource.ConditionLastKnownReconciled, true
	}
	return string(v), true
}

// int reads an integer written without fraction or exponent.
func (s *scanner) int() (int64, bool) {
	s.space()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	if s.i == digits || (s.b[digits] == '0' && s.i-digits > 1) {
		return 0, false
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return 0, false
	}
	v, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	return v, err == nil
}

// time reads a time as the API writes it (RFC 3339, UTC or an offset).
func (s *scanner) time() (time.Time, bool) {
	v, ok := s.raw()
	if !ok || !plainRFC3339(v) {
		return time.Time{}, false
	}
	if v[len(v)-1] == 'Z' {
		return parseUTC(v)
	}
	t, err := time.Parse(time.RFC3339Nano, string(v))
	return t, err == nil
}

// parseUTC reads a time plainRFC3339 accepted that ends in Z, without the
// layout-driven parser: the stored times are all UTC, three to a
// condition. Out-of-range fields (month 13, February 30, second 60) are
// refused as time.Parse refuses them.
func parseUTC(v []byte) (time.Time, bool) {
	num := func(from, to int) int {
		n := 0
		for _, c := range v[from:to] {
			n = n*10 + int(c-'0')
		}
		return n
	}
	year, month, day := num(0, 4), num(5, 7), num(8, 10)
	hour, minute, sec := num(11, 13), num(14, 16), num(17, 19)
	ns := 0
	if frac := v[19 : len(v)-1]; len(frac) > 0 { // ".digits"
		ns = num(20, len(v)-1)
		for i := len(frac) - 1; i < 9; i++ {
			ns *= 10
		}
	}
	if month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, ns, time.UTC)
	if t.Day() != day { // past the month's end: time.Date rolled it over
		return time.Time{}, false
	}
	return t, true
}

// plainRFC3339 checks the shape 2006-01-02T15:04:05[.frac](Z|±07:00), the
// only one the fast path parses (time.Parse alone accepts a little more
// than time.Time's UnmarshalJSON does).
func plainRFC3339(v []byte) bool {
	const shape = "dddd-dd-ddTdd:dd:dd"
	if len(v) < len(shape)+1 {
		return false
	}
	for i := 0; i < len(shape); i++ {
		if shape[i] == 'd' {
			if v[i] < '0' || v[i] > '9' {
				return false
			}
		} else if v[i] != shape[i] {
			return false
		}
	}
	rest := v[len(shape):]
	if rest[0] == '.' {
		n := 1
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == 1 || n > 10 {
			return false
		}
		rest = rest[n:]
	}
	switch {
	case string(rest) == "Z":
		return true
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		for _, i := range []int{1, 2, 4, 5} {
			if rest[i] < '0' || rest[i] > '9' {
				return false
			}
		}
		return rest[1] < '2' || rest[1] == '2' && rest[2] < '4'
	}
	return false
}

// end reports whether only space is left.
func (s *scanner) end() bool {
	s.space()
	return s.i == len(s.b)
}

// items reads open, then items separated by commas, then close.
func (s *scanner) items(open, end byte, item func() bool) bool {
	if !s.next(open) {
		return false
	}
	if s.next(end) {
		return true
	}
	for {
		if !item() {
			return false
		}
		if s.next(end) {
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

// members reads an object, handing each value to member by its key.
func (s *scanner) members(member func(key []byte) bool) bool {
	return s.items('{', '}', func() bool {
		k, ok := s.raw()
		return ok && s.next(':') && member(k)
	})
}

func scanLabels(b []byte) (map[string]string, bool) {
	s := scanner{b: b}
	// Each member has a colon (label keys and values hold none): sized
	// once, the map does not grow through copies of itself.
	m := make(map[string]string, bytes.Count(b, colon))
	ok := s.members(func(k []byte) bool {
		v, ok := s.str()
		m[string(k)] = v
		return ok
	})
	return m, ok && s.end()
}

func scanConditions(b []byte) ([]resource.Condition, bool) {
	s := scanner{b: b}
	out := make([]resource.Condition, 0, 4)
	ok := s.items('[', ']', func() bool {
		c, ok := s.condition()
		out = append(out, c)
		return ok
	})
	return out, ok && s.end()
}

func (s *scanner) condition() (resource.Condition, bool) {
	var c resource.Condition
	ok := s.members(func(k []byte) bool {
		if s.peek('n') {
			return false // null: encoding/json's rules for it differ by field
		}
		var ok bool
		switch string(k) {
		case "type":
			c.Type, ok = s.word()
		case "status":
			var w string
			w, ok = s.word()
			c.Status = resource.ConditionStatus(w)
		case "reason":
			c.Reason, ok = s.str()
		case "message":
			c.Message, ok = s.str()
		case "observed_generation":
			c.ObservedGeneration, ok = s.int()
		case "created_time":
			c.CreatedTime, ok = s.time()
		case "last_updated_time":
			c.LastUpdatedTime, ok = s.time()
		case "last_transition_time":
			c.LastTransitionTime, ok = s.time()
		}
		return ok
	})
	return c, ok
}
