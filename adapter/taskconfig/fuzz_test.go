package taskconfig

import (
	"testing"
)

// FuzzParse feeds hostile YAML to the loader: it must answer with problems,
// never panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte(goodTask))
	f.Add([]byte("params: [{name: x, source: {api_call: {url: '{{ .x'}}}]"))
	f.Add([]byte("resources:\n  - name: r\n    manifest: |\n      {{ range .a }}{{ end }\n"))
	f.Add([]byte("preconditions: [{name: p, expression: 'a.filter(x, '}]"))
	f.Add([]byte("post: {payloads: [{name: p, build: {a: {expression: 1}}}]}"))
	f.Add([]byte("&a [*a, *a]"))
	f.Add([]byte("params: !!binary aGVsbG8="))
	f.Add([]byte("resources: [{name: r, manifest: {ref: ../../../../etc/passwd}}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, problems := Parse("adapter-config.yaml", []byte(adapterYAML), "/tmp/fuzz/adapter-task-config.yaml", data, Options{})
		for _, p := range problems {
			if p.File == "" || p.Message == "" {
				t.Fatalf("problem without file or message: %+v", p)
			}
		}
	})
}
