package search

import (
	"reflect"
	"testing"
	"time"
)

func TestWithTieBreak(t *testing.T) {
	cases := []struct {
		name  string
		order []OrderTerm
		want  []OrderTerm
	}{
		{"default", nil, []OrderTerm{{"created_time", true}, {"id", true}}},
		{"ascending", []OrderTerm{{"name", false}}, []OrderTerm{{"name", false}, {"id", false}}},
		{"last term's direction", []OrderTerm{{"name", false}, {"generation", true}}, []OrderTerm{{"name", false}, {"generation", true}, {"id", true}}},
		{"id already unique", []OrderTerm{{"id", false}, {"name", true}}, []OrderTerm{{"id", false}}},
	}
	for _, c := range cases {
		if got := WithTieBreak(c.order); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestAfter(t *testing.T) {
	when := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		order []OrderTerm
		at    Cursor
		sql   string
		args  []any
	}{
		{"one column", []OrderTerm{{"id", false}}, Cursor{"a"}, "r.id > ?", []any{"a"}},
		{"same direction: a row value with a leading bound",
			WithTieBreak(nil), Cursor{when, "a"},
			"r.created_time <= ? AND (r.created_time, r.id) < (?, ?)", []any{when, when, "a"}},
		{"mixed directions: expanded",
			WithTieBreak([]OrderTerm{{"name", false}, {"generation", true}}), Cursor{"n", int64(2), "a"},
			"(r.name > ? OR (r.name = ? AND ((r.generation < ? OR (r.generation = ? AND (r.id < ?))))))",
			[]any{"n", "n", int64(2), int64(2), "a"}},
		{"NULL ascending: every non-NULL follows",
			WithTieBreak([]OrderTerm{{"deleted_time", false}}), Cursor{nil, "a"},
			"(r.deleted_time IS NOT NULL OR (r.deleted_time IS NULL AND (r.id > ?)))", []any{"a"}},
		{"NULL descending: only NULLs follow",
			WithTieBreak([]OrderTerm{{"deleted_time", true}}), Cursor{nil, "a"},
			"(r.deleted_time IS NULL AND (r.id < ?))", []any{"a"}},
		{"a time descending: NULLs follow it",
			WithTieBreak([]OrderTerm{{"deleted_time", true}}), Cursor{when, "a"},
			"((r.deleted_time < ? OR r.deleted_time IS NULL) OR (r.deleted_time = ? AND (r.id < ?)))", []any{when, when, "a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := After("r", c.order, c.at)
			if err != nil {
				t.Fatal(err)
			}
			if w.SQL != c.sql || !reflect.DeepEqual(w.Args, c.args) {
				t.Errorf("After = %s %v\nwant      %s %v", w.SQL, w.Args, c.sql, c.args)
			}
		})
	}
	for _, bad := range []struct {
		name  string
		order []OrderTerm
		at    Cursor
	}{
		{"too few values", WithTieBreak(nil), Cursor{when}},
		{"a string for a time", WithTieBreak(nil), Cursor{"yesterday", "a"}},
		{"NULL where there is none", WithTieBreak(nil), Cursor{nil, "a"}},
		{"unknown column", []OrderTerm{{"spec", false}}, Cursor{"x"}},
	} {
		if _, err := After("r", bad.order, bad.at); err == nil {
			t.Errorf("%s: accepted", bad.name)
		}
	}
}

func TestOrderByPutsNullFirst(t *testing.T) {
	got := OrderBy("r", WithTieBreak([]OrderTerm{{"deleted_time", true}, {"name", false}}))
	if want := "r.deleted_time DESC NULLS LAST, r.name, r.id"; got != want {
		t.Errorf("OrderBy = %q, want %q", got, want)
	}
}
