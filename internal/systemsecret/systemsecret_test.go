package systemsecret

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const good = "0123456789abcdef0123456789abcdef" // 32 characters

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      string // the secret; "" with an error
		err       string // a substring of the error
	}{
		{name: "32 characters", raw: good, want: good},
		{name: "a trailing newline is trimmed", raw: good + "\n", want: good},
		{name: "a trailing CRLF is trimmed", raw: good + "\r\n", want: good},
		{name: "every visible character", raw: "!~" + good + "`{|}", want: "!~" + good + "`{|}"},
		{name: "the longest", raw: strings.Repeat("x", MaxLength), want: strings.Repeat("x", MaxLength)},
		{name: "empty", raw: "", err: "is empty"},
		{name: "a newline only", raw: "\n", err: "is empty"},
		{name: "31 characters", raw: good[1:], err: "31 characters, fewer than the 32"},
		{name: "short once the newline is trimmed", raw: good[1:] + "\n", err: "31 characters"},
		{name: "two newlines", raw: good + "\n\n", err: "0x0a at offset 32"},
		{name: "too long", raw: strings.Repeat("x", MaxLength+1), err: "more than 4096"},
		{name: "a space inside", raw: good[:10] + " " + good[10:], err: "0x20 at offset 10"},
		{name: "a tab", raw: "\t" + good, err: "0x09 at offset 0"},
		{name: "a NUL", raw: good + "\x00", err: "0x00"},
		{name: "DEL", raw: good + "\x7f", err: "0x7f"},
		{name: "non-ASCII", raw: good + "é", err: "0xc3"},
		{name: "a lone CR", raw: good + "\r", err: "0x0d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.raw))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse = %v, want an error saying %q", err, tc.err)
				}
				if len(tc.raw) >= 8 && strings.Contains(err.Error(), tc.raw[:8]) {
					t.Errorf("the error quotes the content: %v", err)
				}
				if s.Set() || s.Matches(tc.raw) {
					t.Error("a refused secret is set")
				}
				return
			}
			if err != nil || s.Value() != tc.want || !s.Set() {
				t.Fatalf("Parse = %q, %v; want %q", s.Value(), err, tc.want)
			}
		})
	}
}

func TestMatches(t *testing.T) {
	s, err := Parse([]byte(good + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[string]bool{
		good:                  true,
		good + "\n":           false,
		good[:31]:             false, // a prefix
		good + "0":            false, // longer
		strings.ToUpper(good): false,
		"":                    false,
		"true":                false,
	} {
		if got := s.Matches(v); got != want {
			t.Errorf("Matches(%q) = %t, want %t", v, got, want)
		}
	}
	var zero Secret
	if zero.Matches("") || zero.Matches(good) || zero.Set() || zero.Value() != "" {
		t.Error("the zero Secret matches or has a value")
	}
}

// A Secret never prints its value, alone or as a field.
func TestSecretIsNotPrinted(t *testing.T) {
	s, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	type holder struct {
		Name   string
		secret Secret
	}
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%+v", s), fmt.Sprintf("%+v", holder{"x", s}), fmt.Sprintf("%#v", holder{"x", s})} {
		if strings.Contains(out, good) {
			t.Errorf("printed: %s", out)
		}
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "secret")
	if err := os.WriteFile(file, []byte(good+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := Read(file); err != nil || !s.Matches(good) {
		t.Fatalf("Read = %v, %v", s, err)
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(short); err == nil || !strings.HasPrefix(err.Error(), short+" holds 3 characters") {
		t.Errorf("a short file: %v, want it named", err)
	}
	missing := filepath.Join(dir, "missing")
	if _, err := Read(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("a missing file: %v, want it named", err)
	}
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("a directory: %v, want it named", err)
	}
	huge := filepath.Join(dir, "huge")
	if err := os.WriteFile(huge, []byte(strings.Repeat("x", 1<<20)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(huge); err == nil || !strings.Contains(err.Error(), "more than 4096") {
		t.Errorf("a huge file: %v", err)
	}
}
