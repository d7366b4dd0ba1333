package resource

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// MarshalJSON writes the resource as AppendJSON does.
func (r Resource) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil) }

// AppendJSON appends the resource's JSON document to b: byte for byte what
// encoding/json writes for the struct's tags (HTML-safe string escapes,
// sorted label keys, RFC 3339 times, the spec compacted), without
// reflection. Reading a page of resources spent about a quarter of its CPU
// in the reflective encoder (docs/benchmarks.md); the API writes every
// resource through this.
func (r *Resource) AppendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"kind":`...)
	b = appendString(b, r.Kind)
	b = append(b, `,"id":`...)
	b = appendString(b, r.ID)
	b = append(b, `,"href":`...)
	b = appendString(b, r.Href)
	b = append(b, `,"name":`...)
	b = appendString(b, r.Name)
	if o := r.OwnerReferences; o != nil {
		b = append(b, `,"owner_references":{"kind":`...)
		b = appendString(b, o.Kind)
		b = append(b, `,"id":`...)
		b = appendString(b, o.ID)
		b = append(b, `,"href":`...)
		b = appendString(b, o.Href)
		b = append(b, '}')
	}
	if len(r.References) > 0 {
		b = append(b, `,"references":[`...)
		for i, l := range r.References {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"ref_type":`...)
			b = appendString(b, l.RefType)
			b = append(b, `,"kind":`...)
			b = appendString(b, l.Kind)
			b = append(b, `,"id":`...)
			b = appendString(b, l.ID)
			b = append(b, `,"href":`...)
			b = appendString(b, l.Href)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"generation":`...)
	b = strconv.AppendInt(b, r.Generation, 10)
	b = append(b, `,"spec":`...)
	if b, err = appendRaw(b, r.Spec); err != nil {
		return nil, fmt.Errorf("encode spec of %s: %w", r.ID, err)
	}
	b = append(b, `,"labels":`...)
	b = appendLabels(b, r.Labels)
	if len(r.Tenancy) > 0 {
		b = append(b, `,"tenancy":`...)
		b = appendLabels(b, r.Tenancy)
	}
	b = append(b, `,"created_time":`...)
	if b, err = appendTime(b, r.CreatedTime); err != nil {
		return nil, err
	}
	b = append(b, `,"updated_time":`...)
	if b, err = appendTime(b, r.UpdatedTime); err != nil {
		return nil, err
	}
	b = append(b, `,"created_by":`...)
	b = appendString(b, r.CreatedBy)
	b = append(b, `,"updated_by":`...)
	b = appendString(b, r.UpdatedBy)
	if r.DeletedTime != nil {
		b = append(b, `,"deleted_time":`...)
		if b, err = appendTime(b, *r.DeletedTime); err != nil {
			return nil, err
		}
	}
	if r.DeletedBy != "" {
		b = append(b, `,"deleted_by":`...)
		b = appendString(b, r.DeletedBy)
	}
	b = append(b, `,"status":{"conditions":`...)
	if b, err = appendConditions(b, r.Status.Conditions); err != nil {
		return nil, err
	}
	return append(b, "}}"...), nil
}

func appendConditions(b []byte, conds []Condition) ([]byte, error) {
	if conds == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	var err error
	for i := range conds {
		c := &conds[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":`...)
		b = appendString(b, c.Type)
		b = append(b, `,"status":`...)
		b = appendString(b, string(c.Status))
		if c.Reason != "" {
			b = append(b, `,"reason":`...)
			b = appendString(b, c.Reason)
		}
		if c.Message != "" {
			b = append(b, `,"message":`...)
			b = appendString(b, c.Message)
		}
		b = append(b, `,"observed_generation":`...)
		b = strconv.AppendInt(b, c.ObservedGeneration, 10)
		b = append(b, `,"created_time":`...)
		if b, err = appendTime(b, c.CreatedTime); err != nil {
			return nil, err
		}
		b = append(b, `,"last_updated_time":`...)
		if b, err = appendTime(b, c.LastUpdatedTime); err != nil {
			return nil, err
		}
		b = append(b, `,"last_transition_time":`...)
		if b, err = appendTime(b, c.LastTransitionTime); err != nil {
			return nil, err
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

// appendLabels writes a label map as encoding/json does: null when nil,
// keys sorted.
func appendLabels(b []byte, labels map[string]string) []byte {
	if labels == nil {
		return append(b, "null"...)
	}
	var small [16]string
	keys := small[:0]
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendString(b, labels[k])
	}
	return append(b, '}')
}

var errTimeRange = errors.New("time outside the years 0-9999 or its zone offset outside ±24h")

// appendTime writes t as time.Time's MarshalJSON does, refusing what it
// refuses.
func appendTime(b []byte, t time.Time) ([]byte, error) {
	if y := t.Year(); y < 0 || y > 9999 {
		return nil, errTimeRange
	}
	if _, off := t.Zone(); off <= -24*60*60 || off >= 24*60*60 {
		return nil, errTimeRange
	}
	b = append(b, '"')
	if _, off := t.Zone(); off == 0 {
		b = appendUTC(b, t)
	} else {
		b = t.AppendFormat(b, time.RFC3339Nano)
	}
	return append(b, '"'), nil
}

// appendUTC writes a time with a zero offset as RFC 3339 with the
// nanoseconds' trailing zeros dropped, as time.RFC3339Nano does; every
// stored time is UTC, and the layout-driven formatter was the largest cost
// of writing a condition.
func appendUTC(b []byte, t time.Time) []byte {
	year, month, day := t.Date()
	hour, minute, sec := t.Clock()
	b = appendDigits(b, year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, day, 2)
	b = append(b, 'T')
	b = appendDigits(b, hour, 2)
	b = append(b, ':')
	b = appendDigits(b, minute, 2)
	b = append(b, ':')
	b = appendDigits(b, sec, 2)
	if ns := t.Nanosecond(); ns != 0 {
		digits := 9
		for ns%10 == 0 {
			ns /= 10
			digits--
		}
		b = append(b, '.')
		b = appendDigits(b, ns, digits)
	}
	return append(b, 'Z')
}

// appendDigits writes a non-negative v zero-padded to width digits.
func appendDigits(b []byte, v, width int) []byte {
	var buf [9]byte
	for i := width - 1; i >= 0; i-- {
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, buf[:width]...)
}

// appendRaw writes a JSON value as encoding/json writes a RawMessage:
// null when nil, otherwise validated, compacted and HTML-escaped.
func appendRaw(b []byte, raw json.RawMessage) ([]byte, error) {
	if raw == nil {
		return append(b, "null"...), nil
	}
	if !needsCompacting(raw) {
		if !json.Valid(raw) {
			return nil, errors.New("invalid JSON")
		}
		return append(b, raw...), nil
	}
	buf := bytes.NewBuffer(b)
	start := buf.Len()
	if err := json.Compact(buf, raw); err != nil {
		return nil, err
	}
	out := buf.Bytes()
	if !bytes.ContainsAny(out[start:], "<>&\u2028\u2029") {
		return out, nil
	}
	var esc bytes.Buffer
	json.HTMLEscape(&esc, out[start:])
	return append(out[:start], esc.Bytes()...), nil
}

// needsCompacting reports whether raw has anything Compact or HTMLEscape
// would change: whitespace, an HTML-significant character, or a byte
// outside ASCII (U+2028 and U+2029 are escaped).
func needsCompacting(raw []byte) bool {
	for _, c := range raw {
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r', c == '<' || c == '>' || c == '&', c >= utf8.RuneSelf:
			return true
		}
	}
	return false
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string the way encoding/json does by
// default: <, > and & escaped for HTML, \b \f \n \r \t by name, other
// control characters as \u00XX, U+2028 and U+2029 escaped, and invalid
// UTF-8 replaced by U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
