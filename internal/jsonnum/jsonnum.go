// Package jsonnum reads JSON number literals exactly, without going
// through float64: whether a number may be stored (so that PostgreSQL and
// SQLite keep and compare it alike) and whether two literals spell the
// same value (9007199254740993 and 9007199254740992 do not; 1, 1.0 and
// 1e0 do).
package jsonnum

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// MaxLength bounds a number literal. PostgreSQL's numeric refuses more
// than 16,383 digits after the point, which a short literal in exponent
// form never needs; no JSON encoder writes 1,000 characters for a number.
const MaxLength = 1000

// Check reports why a number literal cannot be stored, or nil. A stored
// number must be at most MaxLength characters and within float64's range
// (zero, or between about 4.9e-324 and 1.8e308 in magnitude): SQLite reads
// numbers as 64-bit floats when it searches them, while PostgreSQL keeps
// them exact, so a value outside that range would be searched differently
// on the two backends (1e-400 is 0 to one and not to the other), and one
// outside PostgreSQL's numeric (1e999999999) could not be stored there.
func Check(lit string) error {
	if len(lit) > MaxLength {
		return fmt.Errorf("has %d characters; the limit is %d", len(lit), MaxLength)
	}
	n, ok := parse(lit)
	if !ok {
		return errors.New("is not a JSON number")
	}
	f, err := strconv.ParseFloat(lit, 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange), math.IsInf(f, 0):
		return errors.New("is beyond the range of a 64-bit float (about ±1.8e308)")
	case f == 0 && n.digits != "":
		return errors.New("is too close to zero for a 64-bit float (about 4.9e-324); send 0 or a larger number")
	}
	return nil
}

// Equal reports whether two JSON number literals denote the same value.
// Literals that do not parse are equal only when spelled the same.
func Equal(a, b string) bool {
	if a == b {
		return true
	}
	x, okx := parse(a)
	y, oky := parse(b)
	if !okx || !oky {
		return false
	}
	if x.digits == "" || y.digits == "" {
		return x.digits == y.digits // zero, whatever its sign
	}
	return x.neg == y.neg && x.digits == y.digits && x.exp.Cmp(y.exp) == 0
}

// number is a literal's value as digits × 10^exp, with digits free of
// leading and trailing zeros ("" for zero), so equal values have equal
// forms. The exponent is a big.Int: a literal may carry one of any length.
type number struct {
	neg    bool
	digits string
	exp    *big.Int
}

// parse reads JSON's number grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func parse(lit string) (number, bool) {
	var n number
	s := lit
	if strings.HasPrefix(s, "-") {
		n.neg, s = true, s[1:]
	}
	intPart := leadingDigits(s)
	if intPart == "" || len(intPart) > 1 && intPart[0] == '0' {
		return n, false
	}
	s = s[len(intPart):]
	frac := ""
	if strings.HasPrefix(s, ".") {
		frac = leadingDigits(s[1:])
		if frac == "" {
			return n, false
		}
		s = s[1+len(frac):]
	}
	n.exp = new(big.Int)
	if s != "" {
		if s[0] != 'e' && s[0] != 'E' {
			return n, false
		}
		s = s[1:]
		sign := ""
		if s != "" && (s[0] == '+' || s[0] == '-') {
			sign, s = s[:1], s[1:]
		}
		if d := leadingDigits(s); d == "" || d != s {
			return n, false
		}
		if _, ok := n.exp.SetString(sign+s, 10); !ok {
			return n, false
		}
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	trimmed := strings.TrimRight(digits, "0")
	// value = digits × 10^(exp - len(frac)); trailing zeros move into the
	// exponent.
	n.exp.Sub(n.exp, big.NewInt(int64(len(frac))))
	n.exp.Add(n.exp, big.NewInt(int64(len(digits)-len(trimmed))))
	n.digits = trimmed
	if n.digits == "" {
		n.exp.SetInt64(0)
	}
	return n, true
}

func leadingDigits(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}
