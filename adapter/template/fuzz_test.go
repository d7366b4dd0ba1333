package template

import (
	"testing"
)

// FuzzRender renders arbitrary templates: errors are fine, panics are not.
func FuzzRender(f *testing.F) {
	for _, s := range []string{
		`{{ .clusterId | lower }}`,
		`{{ now | date "2006-01-02" }}`,
		`{{ range $i, $t := .tags }}{{ $t }}{{ end }}`,
		`{{ template "x" }}`,
		`{{ .a.b.c.d }}`,
		`{{ index .tags 99 }}`,
		`{{ "x" | b64dec }}`,
		`{{ slice .clusterId 5 1 }}`,
		`{{ printf "%*d" 100000000 1 }}`,
	} {
		f.Add(s)
	}
	r := New(nil)
	data := Data(map[string]any{"clusterId": "abc", "tags": []any{"a"}, "a": map[string]any{"b": nil}})
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4096 {
			return
		}
		_, _ = r.Render(text, data)
		_, _ = r.References(text)
	})
}
