package jsonnum

import (
	"math/big"
	"strings"
	"testing"
)

func TestEqual(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"9007199254740993", "9007199254740992", false},
		{"9007199254740993", "9007199254740993.0", true},
		{"1", "1.0", true},
		{"1", "1e0", true},
		{"1.5e2", "150", true},
		{"150", "15E+1", true},
		{"0.001", "1e-3", true},
		{"0", "-0", true},
		{"0", "0e-999999999999999999999", true},
		{"0", "2e-400", false},
		{"2e-400", "2.0e-400", true},
		{"2e-400", "2e-401", false},
		{"-1", "1", false},
		{"1e" + strings.Repeat("9", 40), "10e" + strings.Repeat("9", 39) + "8", true},
		{"0.1000000000000000000000000001", "0.1", false},
		{"12345678901234567890123456789", "1.2345678901234567890123456789e28", true},
		{"1.", "1", false}, // not a JSON number: equal only to itself
		{"01", "1", false},
		{"abc", "abc", true},
	} {
		if got := Equal(c.a, c.b); got != c.want {
			t.Errorf("Equal(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := Equal(c.b, c.a); got != c.want {
			t.Errorf("Equal(%q, %q) = %v, want %v", c.b, c.a, got, c.want)
		}
	}
}

func TestCheck(t *testing.T) {
	for lit, ok := range map[string]bool{
		"0": true, "-0": true, "1": true, "9007199254740993": true, "1.7976931348623157e308": true,
		"5e-324": true, "4.9e-324": true, "1e-320": true, "0.0000001": true, "1e308": true,
		"1" + strings.Repeat("0", 308): true, "1." + strings.Repeat("0", 990): true,
		"1e309": false, "-1e309": false, "1e999999999": false, "1e-999999999": false, "2e-400": false,
		"2e-324": false, "1" + strings.Repeat("0", 309): false,
		"0." + strings.Repeat("1", 60000): false, "1e" + strings.Repeat("9", 17000): false,
		"1." + strings.Repeat("0", 1000): false, "0e999999999": true,
	} {
		if err := Check(lit); (err == nil) != ok {
			t.Errorf("Check(%.40s...) = %v, want ok=%v", lit, err, ok)
		}
	}
}

// FuzzEqual checks Equal against exact rational arithmetic wherever the
// latter is affordable (exponents below 10,000), and for symmetry and
// reflexivity everywhere.
func FuzzEqual(f *testing.F) {
	for _, c := range [][2]string{
		{"9007199254740993", "9007199254740992"}, {"1", "1.0"}, {"1.5e2", "150"}, {"0", "-0"},
		{"2e-400", "0"}, {"1e-3", "0.001"}, {"-12.3400e+5", "-1234000"}, {"1e99999", "1e99999"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if Equal(a, b) != Equal(b, a) {
			t.Fatalf("Equal(%q, %q) is not symmetric", a, b)
		}
		if !Equal(a, a) {
			t.Fatalf("Equal(%q, %q) is false", a, a)
		}
		x, okx := parse(a)
		y, oky := parse(b)
		if !okx || !oky || len(a) > 200 || len(b) > 200 || x.exp.CmpAbs(big.NewInt(10000)) > 0 || y.exp.CmpAbs(big.NewInt(10000)) > 0 {
			return
		}
		rx, ok1 := new(big.Rat).SetString(a)
		ry, ok2 := new(big.Rat).SetString(b)
		if !ok1 || !ok2 {
			return // a zero with a huge exponent: big.Rat refuses those
		}
		if want := rx.Cmp(ry) == 0; Equal(a, b) != want {
			t.Fatalf("Equal(%q, %q) = %v, exact comparison says %v", a, b, !want, want)
		}
	})
}
