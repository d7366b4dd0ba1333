// The query text around the TSL parser: rewriting SQL-style lists into
// TSL's form and refusing numbers the parser would mis-read, before
// parsing; cleaning the parser's errors after.

package search

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/yaacov/tree-search-language/v6/pkg/tsl"
)

// sqlStyleLists rewrites SQL-style lists, name in ('a', 'b'), into TSL's
// bracket form, name in ['a', 'b'], so both spellings work. Quoted text is
// left alone.
func sqlStyleLists(q string) string {
	b := []byte(q)
	inQuote := byte(0)
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inQuote != 0 {
			if c == inQuote {
				inQuote = 0
			}
			continue
		}
		if c == '\'' || c == '"' || c == '`' {
			inQuote = c
			continue
		}
		if (c != 'i' && c != 'I') || i+1 >= len(b) || (b[i+1] != 'n' && b[i+1] != 'N') {
			continue
		}
		if i > 0 && isWordByte(b[i-1]) || i+2 < len(b) && isWordByte(b[i+2]) {
			continue
		}
		j := i + 2
		for j < len(b) && (b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\r') {
			j++
		}
		if j >= len(b) || b[j] != '(' {
			continue
		}
		if end := closingParen(b, j); end > 0 {
			b[j], b[end] = '[', ']'
		}
	}
	return string(b)
}

func isWordByte(c byte) bool {
	return c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// closingParen finds the ')' of a flat value list starting at open, or -1.
func closingParen(b []byte, open int) int {
	inQuote := byte(0)
	for k := open + 1; k < len(b); k++ {
		switch c := b[k]; {
		case inQuote != 0:
			if c == inQuote {
				inQuote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			inQuote = c
		case c == '(':
			return -1
		case c == ')':
			return k
		}
	}
	return -1
}

func cleanParseError(err error) string {
	msg := err.Error()
	if se, ok := err.(*tsl.SyntaxError); ok {
		msg = fmt.Sprintf("%s at position %d", se.Message, se.Position)
	}
	return msg
}

// checkNumbers refuses numbers the parser would mis-read: it turns a
// number beyond float64's range (1e400) into 0 without an error.
func checkNumbers(q string) error {
	inQuote := byte(0)
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case inQuote != 0:
			if c == inQuote {
				inQuote = 0
			}
			continue
		case c == '\'' || c == '"' || c == '`':
			inQuote = c
			continue
		case c < '0' || c > '9' || i > 0 && isWordByte(q[i-1]) && q[i-1] != '.':
			continue
		}
		if i > 0 && q[i-1] == '.' && (i < 2 || isWordByte(q[i-2])) {
			continue // part of a name such as spec.a.0
		}
		j := i
		for j < len(q) && (q[j] >= '0' && q[j] <= '9' || q[j] == '.') {
			j++
		}
		if j < len(q) && (q[j] == 'e' || q[j] == 'E') {
			k := j + 1
			if k < len(q) && (q[k] == '+' || q[k] == '-') {
				k++
			}
			if k < len(q) && q[k] >= '0' && q[k] <= '9' {
				for j = k; j < len(q) && q[j] >= '0' && q[j] <= '9'; j++ {
				}
			}
		}
		num := q[i:j]
		if f, err := strconv.ParseFloat(num, 64); err != nil && errors.Is(err, strconv.ErrRange) || math.IsInf(f, 0) {
			return errorf("the number %s is out of range; search numbers must fit a 64-bit float (about ±1.8e308)", truncateText(num, 40))
		}
		i = j - 1
	}
	return nil
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
