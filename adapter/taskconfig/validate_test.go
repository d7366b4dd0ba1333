package taskconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const adapterYAML = `adapter:
  name: test-adapter
  version: "1.0"
clients:
  hyperfleet_api:
    base_url: http://localhost:8000
    retry_backoff: exponential
`

// A minimal valid task config; cases below break one thing each.
const goodTask = `params:
  - name: clusterId
    source: event.id
    required: true
  - name: generation
    source: event.generation
    type: int
preconditions:
  - name: getCluster
    api_call:
      url: /clusters/{{ .clusterId }}
    capture:
      - name: is_deleting
        expression: has(getCluster.deleted_time)
      - name: clusterName
        field: name
    conditions:
      - field: clusterName
        operator: exists
resources:
  - name: ns
    manifest:
      apiVersion: v1
      kind: Namespace
      metadata:
        name: "{{ .clusterId }}"
        annotations:
          hyperfleet.io/generation: "{{ .generation }}"
    discovery:
      by_name: "{{ .clusterId }}"
    lifecycle:
      delete:
        when:
          expression: is_deleting
post:
  payloads:
    - name: status
      build:
        adapter: "{{ .adapter.name }}"
        observed_generation:
          expression: generation
        conditions:
          - type: Available
            status:
              expression: 'resources.?ns.?status.?phase.orValue("") == "Active" ? "True" : "False"'
  post_actions:
    - name: report
      api_call:
        method: PUT
        url: /clusters/{{ .clusterId }}/statuses
        body: "{{ .status }}"
`

func load(t *testing.T, adapter, task string, files map[string]string) Problems {
	t.Helper()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, content := range files {
		write(name, content)
	}
	af := ""
	if adapter != "" {
		af = write("adapter-config.yaml", adapter)
	}
	_, problems := Load(af, write("adapter-task-config.yaml", task), Options{})
	return problems
}

func TestValidConfig(t *testing.T) {
	problems := load(t, adapterYAML, goodTask, nil)
	if err := problems.Err(); err != nil {
		t.Fatal(err)
	}
	if w := problems.Warnings(); len(w) != 0 {
		t.Errorf("unexpected warnings: %v", w)
	}
}

func TestValidationErrors(t *testing.T) {
	tests := []struct {
		name    string
		adapter string
		old     string // text of goodTask to replace
		new     string
		want    []string // substrings of the problems, in any order
	}{
		{"unknown field with suggestion", "", "    required: true\n", "    requird: true\n", []string{`params[0].requird: unknown field "requird"`, `did you mean "required"?`}},
		{"missing param source", "", "    source: event.id\n", "", []string{`params[0].source: param "clusterId" has no source`}},
		{"bad source prefix", "", "source: event.id", "source: evnt.id", []string{`"evnt" is neither a source prefix nor a param defined before this one`}},
		{"secret source needs three parts", "", "source: event.id", "source: secret.ns.name", []string{`must name a namespace, a secret and a key`}},
		{"bad type", "", "    type: int\n", "    type: integer\n", []string{`params[1].type: unknown type "integer"`}},
		{"default of the wrong type", "", "    type: int\n", "    type: int\n    default: lots\n", []string{`params[1].default: default lots: "lots" is not a number`}},
		{"duplicate param", "", "  - name: generation", "  - name: clusterId", []string{`param name "clusterId" is used twice`}},
		{"param named like a built-in", "", "  - name: generation", "  - name: adapter", []string{`"adapter" is reserved`}},
		{"capture field and expression", "", "        field: name\n", "        field: name\n        expression: name\n", []string{"field and expression are mutually exclusive"}},
		{"capture extracts nothing", "", "        field: name\n", "", []string{`capture "clusterName" extracts nothing`}},
		{"bad jsonpath", "", "field: name", "field: \"{.items[?(@.a=='b'}\"", []string{"invalid JSONPath"}},
		{"capture CEL syntax", "", "has(getCluster.deleted_time)", "has(getCluster.deleted_time", []string{"capture[0].expression: CEL does not compile"}},
		{"unknown operator with suggestion", "", "operator: exists", "operator: equal", []string{`invalid operator "equal"`, `did you mean "equals"?`}},
		{"in needs an array", "", "operator: exists", "operator: in\n        value: x", []string{"in needs an array value"}},
		{"greaterThan needs a number", "", "operator: exists", "operator: greaterThan\n        value: big", []string{"greaterThan needs a numeric value"}},
		{"condition on an unknown variable", "", "- field: clusterName", "- field: clustrName", []string{`"clustrName" is not a param or capture in scope here`, `did you mean "clusterName"?`}},
		{"template variable not found", "", `by_name: "{{ .clusterId }}"`, `by_name: "{{ .clusterID }}"`, []string{`template variable "clusterID" not found`, `did you mean "clusterId"?`}},
		{"template syntax", "", `url: /clusters/{{ .clusterId }}`, `url: /clusters/{{ .clusterId `, []string{"template does not parse"}},
		{"template function unknown", "", `url: /clusters/{{ .clusterId }}`, `url: /clusters/{{ .clusterId | shout }}`, []string{`function "shout" not defined`}},
		{"param url uses a later param", "", "  - name: clusterId\n    source: event.id\n    required: true\n",
			"  - name: clusterId\n    source: event.id\n    required: true\n  - name: early\n    source:\n      api_call:\n        url: /x/{{ .generation }}\n",
			[]string{`template variable "generation" not found`}},
		{"CEL unknown variable", "", "expression: is_deleting", "expression: is_deletng", []string{"undeclared reference to 'is_deletng'"}},
		{"CEL not compiling in payload", "", "expression: generation\n", "expression: generation +\n", []string{"post.payloads[0].build.observed_generation.expression: CEL does not compile"}},
		{"delete without discovery", "", "    discovery:\n      by_name: \"{{ .clusterId }}\"\n", "", []string{"lifecycle.delete needs discovery"}},
		{"delete without when", "", "        when:\n          expression: is_deleting\n", "        propagationPolicy: Background\n", []string{"lifecycle.delete needs when.expression"}},
		{"bad propagation policy", "", "      delete:\n", "      delete:\n        propagationPolicy: Eventually\n", []string{`unknown propagationPolicy "Eventually"`}},
		{"discovery by_name and by_selectors", "", "      by_name: \"{{ .clusterId }}\"\n", "      by_name: \"{{ .clusterId }}\"\n      by_selectors:\n        label_selector:\n          a: b\n", []string{"by_name and by_selectors are mutually exclusive"}},
		{"invalid resource name", "", "  - name: ns\n", "  - name: my-ns\n", []string{`resource name "my-ns" is not a valid identifier`}},
		{"manifest without kind", "", "      kind: Namespace\n", "", []string{"resources[0].manifest.kind: the manifest has no kind"}},
		{"missing manifest ref", "", "    manifest:\n      apiVersion: v1\n      kind: Namespace\n      metadata:\n        name: \"{{ .clusterId }}\"\n        annotations:\n          hyperfleet.io/generation: \"{{ .generation }}\"\n",
			"    manifest:\n      ref: /etc/adapter/missing.yaml\n", []string{`manifest.ref "/etc/adapter/missing.yaml" not found`, "--ref-dir /etc/adapter=<local dir>"}},
		{"unknown transport", "", "  - name: ns\n", "  - name: ns\n    transport:\n      client: ftp\n", []string{`unknown transport client "ftp"`}},
		{"maestro without target", "", "  - name: ns\n", "  - name: ns\n    transport:\n      client: maestro\n", []string{"the maestro transport needs a target_cluster"}},
		{"build and build_ref", "", "    - name: status\n", "    - name: status\n      build_ref: b.yaml\n", []string{"build and build_ref are mutually exclusive"}},
		{"bad method", "", "method: PUT", "method: SEND", []string{`unknown method "SEND"`}},
		{"bad backoff", "", "      url: /clusters/{{ .clusterId }}\n    capture:", "      url: /clusters/{{ .clusterId }}\n      retry_backoff: fibonacci\n    capture:", []string{`unknown retry_backoff "fibonacci"`}},
		{"post action without api_call", "", "      api_call:\n        method: PUT", "      xapi_call:\n        method: PUT", []string{"unknown field \"xapi_call\""}},
		{"body uses an unknown payload", "", `body: "{{ .status }}"`, `body: "{{ .statusPayload }}"`, []string{`template variable "statusPayload" not found`}},
		{"not YAML", "", "params:", "params: [", []string{"not valid YAML"}},
		{"adapter name invalid", strings.Replace(adapterYAML, "test-adapter", "Test_Adapter", 1), "", "", []string{`adapter.name "Test_Adapter" is not a valid name`}},
		{"adapter retry_backoff", strings.Replace(adapterYAML, "exponential", "sometimes", 1), "", "", []string{`unknown retry_backoff "sometimes"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			adapter := adapterYAML
			if tc.adapter != "" {
				adapter = tc.adapter
			}
			task := goodTask
			if tc.old != "" {
				if !strings.Contains(task, tc.old) {
					t.Fatalf("test bug: %q not in the base config", tc.old)
				}
				task = strings.Replace(task, tc.old, tc.new, 1)
			}
			problems := load(t, adapter, task, nil)
			all := problems.Errors()
			if len(all) == 0 {
				t.Fatalf("no error; problems: %v", problems)
			}
			text := ""
			for _, p := range all {
				text += p.String() + "\n"
				if p.File == "" || p.Message == "" {
					t.Errorf("problem without file or message: %+v", p)
				}
			}
			for _, want := range tc.want {
				if !strings.Contains(text, want) {
					t.Errorf("problems do not mention %q:\n%s", want, text)
				}
			}
		})
	}
}

func TestAllErrorsReportedAtOnce(t *testing.T) {
	task := strings.NewReplacer("operator: exists", "operator: bogus", `by_name: "{{ .clusterId }}"`, `by_name: "{{ .nope }}"`, "expression: is_deleting", "expression: is_deleting &&").Replace(goodTask)
	errs := load(t, adapterYAML, task, nil).Errors()
	if len(errs) != 3 {
		t.Errorf("got %d errors, want all 3: %v", len(errs), errs)
	}
	for _, p := range errs {
		if p.Line == 0 || p.Fix == "" || p.Path == "" {
			t.Errorf("problem lacks a line, a path or a fix: %s", p)
		}
	}
}

func TestWarnings(t *testing.T) {
	task := strings.Replace(goodTask, "        annotations:\n          hyperfleet.io/generation: \"{{ .generation }}\"\n", "", 1)
	adapter := adapterYAML + "  broker:\n    topic: t\n"
	problems := load(t, adapter, task, nil)
	if err := problems.Err(); err != nil {
		t.Fatal(err)
	}
	text := ""
	for _, w := range problems.Warnings() {
		text += w.String() + "\n"
	}
	for _, want := range []string{"has no hyperfleet.io/generation annotation", "the broker section is ignored"} {
		if !strings.Contains(text, want) {
			t.Errorf("warnings lack %q:\n%s", want, text)
		}
	}
}

func TestRefResolution(t *testing.T) {
	task := strings.Replace(goodTask, "    manifest:\n      apiVersion: v1\n      kind: Namespace\n      metadata:\n        name: \"{{ .clusterId }}\"\n        annotations:\n          hyperfleet.io/generation: \"{{ .generation }}\"\n",
		"    manifest:\n      ref: /etc/adapter/ns.yaml\n", 1)
	ns := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: \"{{ .clusterId }}\"\n  annotations:\n    hyperfleet.io/generation: \"{{ .generation }}\"\n"
	// Named as mounted...
	if err := load(t, adapterYAML, task, map[string]string{"ns.yaml": ns}).Err(); err != nil {
		t.Errorf("ns.yaml beside the task config: %v", err)
	}
	// ... or with the upstream chart's file name.
	if err := load(t, adapterYAML, task, map[string]string{"adapter-task-resource-ns.yaml": ns}).Err(); err != nil {
		t.Errorf("adapter-task-resource-ns.yaml: %v", err)
	}
	// Template variables inside the ref are checked too.
	bad := strings.Replace(ns, ".clusterId", ".clusterUID", 1)
	if err := load(t, adapterYAML, task, map[string]string{"ns.yaml": bad}).Err(); err == nil || !strings.Contains(err.Error(), `"clusterUID" not found`) {
		t.Errorf("bad variable in a ref: %v", err)
	}
}

func TestConvert(t *testing.T) {
	tests := []struct {
		in   any
		typ  string
		want any
		err  bool
	}{
		{"5", "int", int64(5), false},
		{"5.9", "int64", int64(5), false},
		{5.9, "int", int64(5), false},
		{int64(7), "int", int64(7), false},
		{"x", "int", nil, true},
		{"1.5", "float", 1.5, false},
		{int64(2), "float64", 2.0, false},
		{"yes", "bool", true, false},
		{"Off", "bool", false, false},
		{"1", "bool", true, false},
		{int64(0), "bool", false, false},
		{"maybe", "bool", nil, true},
		{int64(3), "string", "3", false},
		{true, "string", "true", false},
		{map[string]any{"a": int64(1)}, "string", `{"a":1}`, false},
		{map[string]any{"a": int64(1)}, "", map[string]any{"a": int64(1)}, false},
	}
	for _, tc := range tests {
		got, err := Convert(tc.in, tc.typ)
		if (err != nil) != tc.err {
			t.Errorf("Convert(%v, %s) err = %v", tc.in, tc.typ, err)
			continue
		}
		if !tc.err && toString(got) != toString(tc.want) {
			t.Errorf("Convert(%v, %s) = %#v, want %#v", tc.in, tc.typ, got, tc.want)
		}
	}
}
