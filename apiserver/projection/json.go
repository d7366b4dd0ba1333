package projection

import (
	"bytes"
	"encoding/json"
	"errors"
)

// errMalformed is the error of a document that is not one JSON object;
// the API only projects documents it wrote, so it means a fault.
var errMalformed = errors.New("projection: the document is not a JSON object")

// maxNesting bounds the recursion of the scanner; stored documents are
// never nested deeper than 32 levels (the request decoder refuses more).
const maxNesting = 64

// Append appends doc, one JSON object, cut down to the projection's
// fields. Kept values are copied byte for byte, in the document's order.
// A field asked for that an item lacks is left out; an object on a path
// (spec, status) is kept, emptied of what it does not hold; an array on a
// path keeps the projection of each of its objects and drops its other
// elements.
func (p *Projection) Append(dst, doc []byte) ([]byte, error) {
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return dst, errMalformed
	}
	out, end, err := appendObject(dst, doc, i, p.root, 0)
	if err != nil {
		return dst, err
	}
	if skipSpace(doc, end) != len(doc) {
		return dst, errMalformed
	}
	return out, nil
}

// appendObject writes the members of the object at doc[i] that n keeps
// and returns the index after it.
func appendObject(dst, doc []byte, i int, n *node, depth int) ([]byte, int, error) {
	if depth > maxNesting {
		return dst, 0, errMalformed
	}
	dst = append(dst, '{')
	first := true
	i = skipSpace(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		return append(dst, '}'), i + 1, nil
	}
	for {
		if i >= len(doc) || doc[i] != '"' {
			return dst, 0, errMalformed
		}
		keyEnd, err := skipString(doc, i)
		if err != nil {
			return dst, 0, err
		}
		key := doc[i:keyEnd]
		i = skipSpace(doc, keyEnd)
		if i >= len(doc) || doc[i] != ':' {
			return dst, 0, errMalformed
		}
		i = skipSpace(doc, i+1)
		valueEnd, err := skipValue(doc, i, depth+1)
		if err != nil {
			return dst, 0, err
		}
		if c := n.children[keyName(key)]; c != nil {
			mark := len(dst)
			if !first {
				dst = append(dst, ',')
			}
			dst = append(append(dst, key...), ':')
			var kept bool
			if dst, kept, err = appendValue(dst, doc, i, valueEnd, c, depth+1); err != nil {
				return dst, 0, err
			}
			if kept {
				first = false
			} else {
				dst = dst[:mark]
			}
		}
		i = skipSpace(doc, valueEnd)
		if i >= len(doc) {
			return dst, 0, errMalformed
		}
		switch doc[i] {
		case ',':
			i = skipSpace(doc, i+1)
		case '}':
			return append(dst, '}'), i + 1, nil
		default:
			return dst, 0, errMalformed
		}
	}
}

// appendValue writes the value doc[i:end] as n keeps it, and says whether
// anything was kept: a scalar where n wants members is not.
func appendValue(dst, doc []byte, i, end int, n *node, depth int) ([]byte, bool, error) {
	if n.all {
		return append(dst, doc[i:end]...), true, nil
	}
	switch doc[i] {
	case '{':
		out, _, err := appendObject(dst, doc, i, n, depth)
		return out, err == nil, err
	case '[':
		out, err := appendArray(dst, doc, i, n, depth)
		return out, err == nil, err
	}
	return dst, false, nil
}

// appendArray writes the projection of each object of the array at doc[i].
func appendArray(dst, doc []byte, i int, n *node, depth int) ([]byte, error) {
	if depth > maxNesting {
		return dst, errMalformed
	}
	dst = append(dst, '[')
	first := true
	i = skipSpace(doc, i+1)
	if i < len(doc) && doc[i] == ']' {
		return append(dst, ']'), nil
	}
	for {
		end, err := skipValue(doc, i, depth+1)
		if err != nil {
			return dst, err
		}
		if doc[i] == '{' {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			if dst, _, err = appendObject(dst, doc, i, n, depth+1); err != nil {
				return dst, err
			}
		}
		i = skipSpace(doc, end)
		if i >= len(doc) {
			return dst, errMalformed
		}
		switch doc[i] {
		case ',':
			i = skipSpace(doc, i+1)
		case ']':
			return append(dst, ']'), nil
		default:
			return dst, errMalformed
		}
	}
}

// keyName is the text of a quoted key; only a key with escapes is decoded.
func keyName(quoted []byte) string {
	inner := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner)
	}
	var s string
	if json.Unmarshal(quoted, &s) != nil {
		return ""
	}
	return s
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at b[i].
func skipString(b []byte, i int) (int, error) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return 0, errMalformed
}

// skipValue returns the index after the value that starts at b[i]. It
// checks the structure (brackets, quotes, separators), not every token:
// the documents are the API's own.
func skipValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) || depth > maxNesting {
		return 0, errMalformed
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		closer := byte('}')
		if b[i] == '[' {
			closer = ']'
		}
		j := skipSpace(b, i+1)
		if j < len(b) && b[j] == closer {
			return j + 1, nil
		}
		for {
			if closer == '}' {
				if j >= len(b) || b[j] != '"' {
					return 0, errMalformed
				}
				end, err := skipString(b, j)
				if err != nil {
					return 0, err
				}
				j = skipSpace(b, end)
				if j >= len(b) || b[j] != ':' {
					return 0, errMalformed
				}
				j = skipSpace(b, j+1)
			}
			end, err := skipValue(b, j, depth+1)
			if err != nil {
				return 0, err
			}
			j = skipSpace(b, end)
			if j >= len(b) {
				return 0, errMalformed
			}
			switch b[j] {
			case ',':
				j = skipSpace(b, j+1)
			case closer:
				return j + 1, nil
			default:
				return 0, errMalformed
			}
		}
	}
	j := i
	for j < len(b) && isScalarByte(b[j]) {
		j++
	}
	if j == i {
		return 0, errMalformed
	}
	return j, nil
}

// isScalarByte reports whether c may be part of a number, true, false or
// null.
func isScalarByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-' || c == '+' || c == '.' || c == 'E'
}
