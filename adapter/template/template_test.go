package template

import (
	"strings"
	"testing"
	"time"
)

var clock = time.Date(2025, 6, 1, 12, 30, 45, 0, time.UTC)

func TestRender(t *testing.T) {
	r := New(func() time.Time { return clock })
	data := Data(map[string]any{
		"clusterId": "ABC-123", "generation": int64(5), "ratio": 1.5, "empty": "", "nothing": nil,
		"payload": JSON{V: map[string]any{"adapter": "a", "observed_generation": int64(2)}},
		"tags":    []any{"x", "y"}, "adapter": map[string]any{"name": "landing-zone"},
		"when": "2025-01-02T03:04:05Z", "cfg": map[string]any{"platformType": "gcp"},
	})
	tests := []struct{ tpl, want string }{
		{`{{ .clusterId }}`, "ABC-123"},
		{`/clusters/{{ .clusterId }}/statuses`, "/clusters/ABC-123/statuses"},
		{`{{ .clusterId | lower }}`, "abc-123"},
		{`{{ .clusterId | upper }}`, "ABC-123"},
		{`{{ "  x " | trim }}`, "x"},
		{`{{ .clusterId | replace "-" "_" }}`, "ABC_123"},
		{`{{ .empty | default "us-east-1" }}`, "us-east-1"},
		{`{{ .clusterId | default "x" }}`, "ABC-123"},
		{`{{ .nothing | default "dflt" }}`, "dflt"},
		{`{{ .nothing }}`, ""},
		{`{{ .clusterId | quote }}`, `"ABC-123"`},
		{`{{ "7" | int }}`, "7"},
		{`{{ .ratio | int }}`, "1"},
		{`{{ .generation | string }}`, "5"},
		{`{{ now | date "2006-01-02T15:04:05Z07:00" }}`, "2025-06-01T12:30:45Z"},
		{`{{ .when | date "2006-01-02" }}`, "2025-01-02"},
		{`{{ .payload }}`, `{"adapter":"a","observed_generation":2}`},
		{`{{ .adapter.name }}`, "landing-zone"},
		{`{{ if eq .cfg.platformType "gcp" }}cloud{{ else }}onprem{{ end }}`, "cloud"},
		{`{{ range $i, $t := .tags }}{{ $i }}={{ $t }};{{ end }}`, "0=x;1=y;"},
		{`{{ .tags | join "," }}`, "x,y"},
		{`{{ .clusterId | trunc 3 }}`, "ABC"},
		{`{{ "hi" | b64enc }}`, "aGk="},
		{`{{ .cfg | toJson }}`, `{"platformType":"gcp"}`},
		{`no template at all`, "no template at all"},
		{`{{ .clusterId | squote }}`, "'ABC-123'"},
		{`{{ "aGk=" | b64dec }}`, "hi"},
		{`{{ "x" | sha256sum }}`, "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"},
		{`{{ "a-b" | trimPrefix "a-" }}`, "b"},
		{`{{ "a-b" | trimSuffix "-b" }}`, "a"},
		{`{{ if .clusterId | contains "123" }}y{{ end }}`, "y"},
		{`{{ if .clusterId | hasPrefix "ABC" }}y{{ end }}{{ if .clusterId | hasSuffix "9" }}n{{ end }}`, "y"},
		{`{{ "a,b" | split "," | join "+" }}`, "a+b"},
		{`{{ "l1\nl2" | indent 2 }}`, "  l1\n  l2"},
		{`{{ "x" | nindent 1 }}`, "\n x"},
		{`{{ "2.5" | float64 }}`, "2.5"},
		{`{{ .generation | int64 }}`, "5"},
		{`{{ 1700000000 | date "2006-01-02" }}`, "2023-11-14"},
	}
	for _, tc := range tests {
		got, err := r.Render(tc.tpl, data)
		if err != nil {
			t.Errorf("Render(%s): %v", tc.tpl, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Render(%s) = %q, want %q", tc.tpl, got, tc.want)
		}
	}
}

func TestRenderErrors(t *testing.T) {
	r := New(nil)
	for tpl, want := range map[string]string{
		`{{ .missing }}`:          `no variable named "missing"`,
		`{{ .clusterId | nope }}`: `function "nope" not defined`,
		`{{ .clusterId `:          "unclosed action",
		`{{ "x" | date "2006" }}`: "not an RFC 3339 time",
	} {
		_, err := r.Render(tpl, map[string]any{"clusterId": "x"})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Render(%s) = %v, want %q", tpl, err, want)
		}
	}
}

func TestReferences(t *testing.T) {
	r := New(nil)
	got, err := r.References(`{{ .a }}/{{ .b.c | lower }}{{ if .d }}{{ .e }}{{ end }}{{ range .f }}{{ .inner }}{{ $.g }}{{ end }}{{ with .h }}{{ .x }}{{ end }}`)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "a,b,d,e,f,g,h" {
		t.Errorf("references = %v", got)
	}
}
