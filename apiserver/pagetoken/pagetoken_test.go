package pagetoken

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver/search"
)

var (
	byName    = search.WithTieBreak([]search.OrderTerm{{Column: "name"}})
	byDeleted = search.WithTieBreak([]search.OrderTerm{{Column: "deleted_time", Desc: true}, {Column: "generation"}})
	when      = time.Date(2026, 11, 23, 14, 0, 0, 123456000, time.UTC)
)

func TestRoundTrip(t *testing.T) {
	cases := []struct {
		name  string
		order []search.OrderTerm
		at    search.Cursor
	}{
		{"default order", search.WithTieBreak(nil), search.Cursor{when, "01a2"}},
		{"name", byName, search.Cursor{"alpha", "01a2"}},
		{"NULL deleted_time", byDeleted, search.Cursor{nil, int64(7), "01a2"}},
		{"deleted_time set", byDeleted, search.Cursor{when.Add(time.Nanosecond), int64(-1), ""}},
		{"unicode", byName, search.Cursor{"ünï\x00côdé", "x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := Query("Cluster", "", "labels.a='b'", c.order)
			s, err := Encode(q, 3, c.order, c.at)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(s, q, c.order)
			if err != nil {
				t.Fatalf("decode %s: %v", s, err)
			}
			if got.Page != 3 || len(got.After) != len(c.at) {
				t.Fatalf("decoded %+v, want page 3 at %v", got, c.at)
			}
			for i := range c.at {
				want, isTime := c.at[i].(time.Time)
				if isTime && !got.After[i].(time.Time).Equal(want) || !isTime && got.After[i] != c.at[i] {
					t.Errorf("value %d = %#v, want %#v", i, got.After[i], c.at[i])
				}
			}
		})
	}
}

func TestDecodeRefuses(t *testing.T) {
	q := Query("Cluster", "", "", byName)
	good, err := Encode(q, 2, byName, search.Cursor{"alpha", "01a2"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, token, query string
		order              []search.OrderTerm
		want               string
	}{
		{"another search", good, Query("Cluster", "", "name='x'", byName), byName, "was issued for"},
		{"another kind", good, Query("NodePool", "", "", byName), byName, "was issued for"},
		{"another parent", good, Query("Cluster", "p1", "", byName), byName, "was issued for"},
		{"not base64", "%%%", q, byName, "not base64url"},
		{"not JSON", "bm90IGpzb24", q, byName, "not its encoding"},
		{"another version", "eyJ2Ijo5fQ", q, byName, "version 9"},
		{"page 1", encodeWire(t, wire{V: 1, Q: q, P: 1, K: strs("a", "b")}), q, byName, "page 1"},
		{"too few values", encodeWire(t, wire{V: 1, Q: q, P: 2, K: strs("a")}), q, byName, "was issued for"},
		{"null name", encodeWire(t, wire{V: 1, Q: q, P: 2, K: []*string{nil, ptr("b")}}), q, byName, "invalid name"},
		{"bad time", encodeWire(t, wire{V: 1, Q: Query("Cluster", "", "", byDeleted), P: 2, K: strs("yesterday", "1", "x")}), Query("Cluster", "", "", byDeleted), byDeleted, "invalid deleted_time"},
		{"bad number", encodeWire(t, wire{V: 1, Q: Query("Cluster", "", "", byDeleted), P: 2, K: []*string{nil, ptr("1e3"), ptr("x")}}), Query("Cluster", "", "", byDeleted), byDeleted, "invalid generation"},
		{"too long", strings.Repeat("A", MaxLength+1), q, byName, "characters long"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(c.token, c.query, c.order)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Decode = %v, want an error containing %q", err, c.want)
			}
		})
	}
	if _, err := Decode(good, Query("Cluster", "", "name='x'", byName), byName); !errors.Is(err, ErrForeign) {
		t.Errorf("a token of another query: %v, want ErrForeign", err)
	}
}

// Query tells apart inputs that a plain concatenation would not.
func TestQueryIsUnambiguous(t *testing.T) {
	if Query("Cluster", "ab", "c", byName) == Query("Cluster", "a", "bc", byName) {
		t.Error("parent and search run together")
	}
	desc := search.WithTieBreak([]search.OrderTerm{{Column: "name", Desc: true}})
	if Query("Cluster", "", "", byName) == Query("Cluster", "", "", desc) {
		t.Error("direction is not part of the query")
	}
}

func strs(s ...string) []*string {
	out := make([]*string, len(s))
	for i := range s {
		out[i] = &s[i]
	}
	return out
}

func ptr(s string) *string { return &s }
