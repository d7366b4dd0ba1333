package search

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/resource"
)

var opts = Options{Table: "resources"}

func TestTranslatePostgres(t *testing.T) {
	tests := []struct {
		query string
		sql   string
		args  []any
	}{
		{"name='my-cluster'", "resources.name = ?", []any{"my-cluster"}},
		{"name != 'a'", "resources.name IS DISTINCT FROM ?", []any{"a"}},
		{"name like 'prod-%'", "resources.name LIKE ?", []any{"prod-%"}},
		{"generation >= 2", "resources.generation >= ?", []any{int64(2)}},
		{"generation < 10 and generation > 1", "(resources.generation < ? AND resources.generation > ?)", []any{int64(10), int64(1)}},
		{"name in ('a', 'b')", "(resources.name = ? OR resources.name = ?)", []any{"a", "b"}},
		{"not (name = 'a')", "(NOT resources.name = ?)", []any{"a"}},
		{"name in ['a']", "(resources.name = ?)", []any{"a"}},
		{"name in ('in (x)', 'b')", "(resources.name = ? OR resources.name = ?)", []any{"in (x)", "b"}},
		{"name not in ('a')", "(NOT (resources.name = ?))", []any{"a"}},
		{"labels.environment='production'", "resources.labels @> ?::jsonb", []any{`{"environment":"production"}`}},
		{"labels['cost-center'] != 'eng'", "(NOT resources.labels @> ?::jsonb)", []any{`{"cost-center":"eng"}`}},
		{"labels.hyperfleet.io/cluster in ('x')", "(resources.labels @> ?::jsonb)", []any{`{"hyperfleet.io/cluster":"x"}`}},
		{"labels.env like 'x%'", "(resources.labels ->> ?) LIKE ?", []any{"env", "x%"}},
		{"status.conditions.Ready='True'", "resources.conditions @> ?::jsonb", []any{`[{"type":"Ready","status":"True"}]`}},
		{"status.conditions.Available != 'True'", "(NOT resources.conditions @> ?::jsonb)", []any{`[{"type":"Available","status":"True"}]`}},
		{"spec.platform.type = 'gcp'", "(resources.spec_jsonb #>> ?::text[]) = ?", []any{"{platform,type}", "gcp"}},
		{"spec.replicas > 2", "(CASE WHEN jsonb_typeof(resources.spec_jsonb #> ?::text[]) = 'number' THEN (resources.spec_jsonb #>> ?::text[])::numeric END) > ?",
			[]any{"{replicas}", "{replicas}", float64(2)}},
		{"spec.enabled = true", "(resources.spec_jsonb #> ?::text[]) = ?::jsonb", []any{"{enabled}", "true"}},
		{"spec.subnets[0].name = 'a'", "(resources.spec_jsonb #>> ?::text[]) = ?", []any{"{subnets,0,name}", "a"}},
		{"created_time > '2025-01-01T00:00:00Z'", "resources.created_time > ?", []any{time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"deleted_time > '2025-01-01'", "resources.deleted_time > ?", []any{time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"(name='a' or name='b') and labels.env>'dev'", "((resources.name = ? OR resources.name = ?) AND (resources.labels ->> ?) > ?)", []any{"a", "b", "env", "dev"}},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			w, err := Translate(tc.query, Postgres, opts)
			if err != nil {
				t.Fatalf("Translate: %v", err)
			}
			if w.SQL != tc.sql {
				t.Errorf("SQL\n got %s\nwant %s", w.SQL, tc.sql)
			}
			if fmt.Sprint(w.Args) != fmt.Sprint(tc.args) {
				t.Errorf("args = %v, want %v", w.Args, tc.args)
			}
			if strings.Count(w.SQL, "?") != len(w.Args) {
				t.Errorf("%d placeholders for %d args", strings.Count(w.SQL, "?"), len(w.Args))
			}
		})
	}
}

func TestTranslateSQLite(t *testing.T) {
	tests := []struct {
		query string
		sql   string
		args  []any
	}{
		{"name != 'a'", "resources.name IS NOT ?", []any{"a"}},
		{"labels.environment='production'", "json_extract(resources.labels, ?) = ?", []any{`$."environment"`, "production"}},
		{"status.conditions.Ready='True'",
			"EXISTS (SELECT 1 FROM json_each(resources.conditions) AS c WHERE json_extract(c.value, '$.type') = ? AND json_extract(c.value, '$.status') = ?)",
			[]any{"Ready", "True"}},
		{"spec.subnets[1].cidr = '10.0.0.0/24'",
			"(CASE WHEN (CASE WHEN json_valid(resources.spec) THEN json_type(resources.spec, ?) END) = 'text' THEN json_extract(resources.spec, ?) END) = ?",
			[]any{`$."subnets"[1]."cidr"`, `$."subnets"[1]."cidr"`, "10.0.0.0/24"}},
		{"spec.enabled = false", "(CASE WHEN json_valid(resources.spec) THEN json_type(resources.spec, ?) END) = ?", []any{`$."enabled"`, "false"}},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			w, err := Translate(tc.query, SQLite, opts)
			if err != nil {
				t.Fatalf("Translate: %v", err)
			}
			if w.SQL != tc.sql {
				t.Errorf("SQL\n got %s\nwant %s", w.SQL, tc.sql)
			}
			if fmt.Sprint(w.Args) != fmt.Sprint(tc.args) {
				t.Errorf("args = %v, want %v", w.Args, tc.args)
			}
		})
	}
}

func TestTranslateOwnerReferences(t *testing.T) {
	if _, err := Translate("owner_references.id = 'x'", Postgres, opts); err == nil {
		t.Error("owner_references.id accepted on clusters")
	}
	w, err := Translate("owner_references.id = 'x'", Postgres, Options{Table: "resources", OwnerReferences: true})
	if err != nil || w.SQL != "resources.parent_id = ?" {
		t.Errorf("node pool owner search = %q, %v", w.SQL, err)
	}
}

// Referrers: a link to the target id, of one type or of any; read from
// resource_references when the resources table is searched (Indexed),
// from the row's refs document otherwise (the change log).
func TestTranslateReferences(t *testing.T) {
	indexed := Options{Table: "resources", Indexed: true, RefTypes: []string{"wif_config", "channel"}}
	logged := Options{Table: "resources", RefTypes: []string{"wif_config"}}
	tests := []struct {
		query   string
		dialect Dialect
		opts    Options
		sql     string
		args    []any
	}{
		{"references.wif_config.id = 'w1'", Postgres, indexed,
			"EXISTS (SELECT 1 FROM resource_references AS rr WHERE rr.resource_id = resources.id AND rr.target_id = ? AND rr.ref_type = ?)", []any{"w1", "wif_config"}},
		{"references.id = 'w1'", SQLite, indexed,
			"EXISTS (SELECT 1 FROM resource_references AS rr WHERE rr.resource_id = resources.id AND rr.target_id = ?)", []any{"w1"}},
		{"references.channel.id in ('a', 'b')", SQLite, indexed,
			"(EXISTS (SELECT 1 FROM resource_references AS rr WHERE rr.resource_id = resources.id AND rr.target_id = ? AND rr.ref_type = ?) OR EXISTS (SELECT 1 FROM resource_references AS rr WHERE rr.resource_id = resources.id AND rr.target_id = ? AND rr.ref_type = ?))",
			[]any{"a", "channel", "b", "channel"}},
		{"references.wif_config.id != 'w1'", Postgres, indexed,
			"(NOT EXISTS (SELECT 1 FROM resource_references AS rr WHERE rr.resource_id = resources.id AND rr.target_id = ? AND rr.ref_type = ?))", []any{"w1", "wif_config"}},
		{"references.wif_config.id = 'w1'", Postgres, logged, "resources.refs @> ?::jsonb", []any{`[{"id":"w1","ref_type":"wif_config"}]`}},
		{"references.id = 'w1'", Postgres, logged, "resources.refs @> ?::jsonb", []any{`[{"id":"w1"}]`}},
		{"references.wif_config.id = 'w1'", SQLite, logged,
			"EXISTS (SELECT 1 FROM json_each(resources.refs) AS rl WHERE json_extract(rl.value, '$.id') = ? AND json_extract(rl.value, '$.ref_type') = ?)", []any{"w1", "wif_config"}},
		// Across kinds (nil RefTypes) any type is taken.
		{"references.anything.id = 'x'", SQLite, Options{Table: "resources", Indexed: true},
			"EXISTS (SELECT 1 FROM resource_references AS rr WHERE rr.resource_id = resources.id AND rr.target_id = ? AND rr.ref_type = ?)", []any{"x", "anything"}},
	}
	for _, tc := range tests {
		w, err := Translate(tc.query, tc.dialect, tc.opts)
		if err != nil {
			t.Errorf("Translate(%q): %v", tc.query, err)
			continue
		}
		if w.SQL != tc.sql || fmt.Sprint(w.Args) != fmt.Sprint(tc.args) {
			t.Errorf("Translate(%q)\n got %s %v\nwant %s %v", tc.query, w.SQL, w.Args, tc.sql, tc.args)
		}
		if w.Plan != nil {
			t.Errorf("Translate(%q) has a term plan; references are not in the term index", tc.query)
		}
	}
	for _, c := range []struct {
		query string
		opts  Options
		want  string
	}{
		{"references.channel.id = 'x'", logged, `declares no reference "channel"; its ref_types are wif_config`},
		{"references.wif_config.id = 'x'", Options{Table: "resources", RefTypes: []string{}}, "this kind declares no references"},
		{"references.id = 'x'", Options{Table: "resources", RefTypes: []string{}}, "this kind declares no references"},
		{"references.wif_config = 'x'", logged, "find referrers by the target's id"},
		{"references.a b.id = 'x'", logged, "not valid TSL"},
		{"references.wif_config.id > 'x'", logged, "only compares with =, != or in"},
		{"references.wif_config.id = 5", logged, "quote the value"},
		{"references.wif_config.id like 'x%'", logged, "like only applies to text fields"},
	} {
		_, err := Translate(c.query, SQLite, c.opts)
		var se *Error
		if !errors.As(err, &se) || !strings.Contains(se.Message, c.want) {
			t.Errorf("Translate(%q) = %v, want a message with %q", c.query, err, c.want)
		}
	}
}

// A kind's search_disallowed_fields keep those fields, and everything
// under them, out of its searches; other fields stay searchable.
func TestTranslateDisallowedFields(t *testing.T) {
	o := opts
	o.Disallowed = resource.Kind{SearchDisallowedFields: []string{"spec", "labels.owner"}}.SearchDisallowed
	for _, q := range []string{"spec.tier = 'gold'", "name = 'a' and spec.a.b > 1", "labels.owner = 'me'", "labels['owner'] = 'me'"} {
		_, err := Translate(q, SQLite, o)
		var se *Error
		if !errors.As(err, &se) || !strings.Contains(se.Message, "not searchable here") || !strings.Contains(se.Message, "search_disallowed_fields") {
			t.Errorf("Translate(%q) = %v, want a refusal naming search_disallowed_fields", q, err)
		}
	}
	for _, q := range []string{"name = 'a'", "labels.team = 'x'", "status.conditions.Ready = 'True'"} {
		if _, err := Translate(q, SQLite, o); err != nil {
			t.Errorf("Translate(%q) = %v", q, err)
		}
	}
}

func TestTranslateRejects(t *testing.T) {
	tests := []struct {
		query string
		want  string // part of the message
	}{
		{"name = ", "not valid TSL"},
		{"name = 'a' and", "not valid TSL"},
		{"unknown = 'x'", `unknown field "unknown"`},
		{"password = 'x'", `unknown field "password"`},
		{"name ~= 'x'", "operator ~= is not supported"},
		{"name is null", "operator is is not supported"},
		{"generation between 1 and 3", "operator between is not supported"},
		{"name ilike 'x'", "operator ilike is not supported"},
		{"generation = 'two'", "generation is an integer"},
		{"generation = 1.5", "generation is an integer"},
		{"name = 5", "name is text"},
		{"labels.env = 5", "label values are text"},
		{"labels.cost-center = 'x'", "labels['cost-center']"},
		{"labels['bad key!'] = 'x'", "not a valid label key"},
		{"created_time > 'yesterday'", "created_time is a time"},
		{"created_time like '2025%'", "like only applies to text fields"},
		{"status.conditions.Ready = 'Maybe'", "True or False"},
		{"status.conditions.Ready > 'True'", "only compares with"},
		{"status.conditions.Re'ady = 'True'", "not valid TSL"},
		{"'x' = name", "field on the left"},
		{"name = other", "must be a value"},
		{"name in 'a'", "in needs a list"},
		{"name = ['a', 'b']", "only goes with in"},
		{"not name = 'a'", "write not (field = 'value')"},
		{"name", "must be a comparison"},
		{"spec = 'x'", "unknown field"},
		{"spec.a;b = 'x'", "not valid TSL"},
		{"spec['a;drop'] = 'x'", "may only hold"},
		{strings.Repeat("not (", 100) + "name='a'" + strings.Repeat(")", 100), "nested"},
		{strings.Repeat("x", MaxQueryLength+1), "limit"},
		{"name in (" + values(MaxListValues+1) + ")", "the in list of name has 101 values; the limit is 100"},
		{"labels.env in (" + values(MaxListValues+1) + ")", "the limit is 100"},
		{"spec.a in (" + values(MaxListValues+1) + ")", "the limit is 100"},
		{terms(MaxTerms + 1), "more than 32 comparisons; the limit is 32"},
		{"generation > 1e400", "1e400 is out of range"},
		{"spec.x > 1e400", "out of range"},
		{"spec.x in (1, -1E+999)", "out of range"},
		{"generation > 100000000000000000", "out of range"},
		{"generation > -1e300", "out of range"},
		{"name = 'a\x00b'", "name: the value holds a NUL character"},
		{"labels.x = '\x00'", "labels.x: the value holds a NUL"},
		{"spec.x = 'a\x00'", "spec.x: the value holds a NUL"},
		{"id = '\x00'", "id: the value holds a NUL"},
		{"created_by != '\x00'", "created_by: the value holds a NUL"},
		{"name like '\x00%'", "name: the value holds a NUL"},
		{"name in ('a', '\x00')", "name: the value holds a NUL"},
		{"created_time > '2025-01-01\x00'", "created_time: the value holds a NUL"},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			_, err := Translate(tc.query, Postgres, opts)
			if err == nil {
				t.Fatalf("accepted %q", tc.query)
			}
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T is not a *search.Error", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("message %q does not contain %q", err.Error(), tc.want)
			}
		})
	}
}

func values(n int) string {
	v := make([]string, n)
	for i := range v {
		v[i] = fmt.Sprintf("'v%d'", i)
	}
	return strings.Join(v, ", ")
}

func terms(n int) string {
	v := make([]string, n)
	for i := range v {
		v[i] = fmt.Sprintf("name = 'n%d'", i)
	}
	return strings.Join(v, " or ")
}

// At the limits a search is accepted; negative numbers are numbers; names
// and quoted text that look like big numbers are not numbers.
func TestTranslateLimitsAndNumbers(t *testing.T) {
	for q, wantArg := range map[string]any{
		"name in (" + values(MaxListValues) + ")": nil,
		terms(MaxTerms):                          nil,
		"generation > -1":                        int64(-1),
		"spec.x >= -1.5e3":                       -1500.0,
		"spec.x in (1, -2)":                      -2.0,
		"name = '1e400'":                         "1e400",
		"labels.a1e400 = 'x'":                    "x",
		"generation = 1 and spec.a.b1e999 = 'x'": nil,
		"created_time > '2025-01-01' and spec.n < 1.5e+300": 1.5e300,
	} {
		w, err := Translate(q, SQLite, opts)
		if err != nil {
			if strings.Contains(err.Error(), "out of range") || wantArg != nil {
				t.Errorf("Translate(%.60q): %v", q, err)
			}
			continue
		}
		if wantArg != nil && !slices.Contains(w.Args, wantArg) {
			t.Errorf("Translate(%.60q) args %v lack %v", q, w.Args, wantArg)
		}
	}
}

// Values that look like SQL must only ever travel as bound parameters.
func TestTranslateInjectionStaysInArgs(t *testing.T) {
	payloads := []string{
		`name = 'x'' OR ''1''=''1'`,
		`name = 'a; DROP TABLE resources; --'`,
		`labels.env = 'x'') OR 1=1 --'`,
		`spec.a = '1 UNION SELECT * FROM adapter_statuses'`,
	}
	for _, q := range payloads {
		for _, d := range []Dialect{Postgres, SQLite} {
			w, err := Translate(q, d, opts)
			if err != nil {
				continue // a refusal is also safe
			}
			for _, bad := range []string{"DROP", "UNION", "1=1", "--"} {
				if strings.Contains(w.SQL, bad) {
					t.Errorf("%q leaked %q into SQL: %s", q, bad, w.SQL)
				}
			}
		}
	}
}

func TestParseOrder(t *testing.T) {
	tests := []struct {
		orderBy, order string
		want           string
		err            string
	}{
		{"", "", "created_time desc", ""},
		{"name", "", "name asc", ""},
		{"name", "desc", "name desc", ""},
		{"name", "ASC", "name asc", ""},
		{"", "desc", "created_time desc", ""},
		{"", "asc", "created_time asc", ""},
		{"", "name desc", "name desc", ""},
		{"", "generation asc, name desc", "generation asc,name desc", ""},
		{"name desc, id", "asc", "name desc,id asc", ""},
		{"", "password", "", "cannot order by"},
		{"name", "sideways", "", "must be asc or desc"},
		{"name;drop", "", "", "cannot order by"},
		{"", "name up", "", "direction"},
		{"", "name, name", "", "twice"},
		{"", "name asc extra", "", "not <field>"},
	}
	for _, tc := range tests {
		terms, err := ParseOrder(tc.orderBy, tc.order)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseOrder(%q,%q) err = %v, want %q", tc.orderBy, tc.order, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseOrder(%q,%q): %v", tc.orderBy, tc.order, err)
			continue
		}
		var got []string
		for _, term := range terms {
			got = append(got, term.Column+map[bool]string{true: " desc", false: " asc"}[term.Desc])
		}
		if strings.Join(got, ",") != tc.want {
			t.Errorf("ParseOrder(%q,%q) = %v, want %s", tc.orderBy, tc.order, got, tc.want)
		}
	}
}

// kind (on /resources) refuses NUL like every other text field; a quoted
// number with an exponent is searched as text only on PostgreSQL (it was
// also tried as a jsonb number, which 1e999999999 is beyond).
func TestTranslateTextValues(t *testing.T) {
	if _, err := Translate("kind = '\x00'", Postgres, Options{Table: "resources", Kind: true}); err == nil || !strings.Contains(err.Error(), "kind: the value holds a NUL") {
		t.Errorf("kind with NUL: %v", err)
	}
	w, err := Translate("spec.x = '1e999999999'", Postgres, Options{Table: "resources", Indexed: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range w.Args {
		if s, ok := a.(string); ok && strings.Contains(s, ":1e999999999") {
			t.Errorf("the quoted number became a jsonb number: %q in %s", s, w.SQL)
		}
	}
	w, err = Translate("spec.x = '3.50'", Postgres, Options{Table: "resources", Indexed: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fmt.Sprint(w.Args), `{"x":3.50}`) {
		t.Errorf("a plain decimal is no longer tried as a number: %v", w.Args)
	}
}
