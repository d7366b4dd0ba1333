package testenv

import "testing"

func TestLastLines(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"a", "a"},
		{"a\n", "a"},
		{"a\nb\nc\n", "b\nc"},
		{"a\nb\nc", "b\nc"},
		{"b\nc", "b\nc"},
		{"\nc", "\nc"},
		{"\n\nc", "\nc"},
	} {
		if got := string(lastLines([]byte(c.in), 2)); got != c.want {
			t.Errorf("lastLines(%q, 2) = %q, want %q", c.in, got, c.want)
		}
	}
}
