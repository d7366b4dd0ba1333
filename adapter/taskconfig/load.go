package taskconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Severity of a problem.
type Severity int

const (
	SeverityError Severity = iota
	SeverityWarning
)

// Problem is one finding about a config file.
type Problem struct {
	Severity Severity
	File     string
	Line     int
	Path     string
	Message  string
	Fix      string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Severity == SeverityWarning {
		b.WriteString("warning: ")
	}
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	if p.Fix != "" {
		b.WriteString(" (fix: ")
		b.WriteString(p.Fix)
		b.WriteString(")")
	}
	return b.String()
}

// Problems is every finding of a load.
type Problems []Problem

// Errors returns the problems that fail validation.
func (ps Problems) Errors() Problems {
	var out Problems
	for _, p := range ps {
		if p.Severity == SeverityError {
			out = append(out, p)
		}
	}
	return out
}

// Warnings returns the problems that do not fail validation.
func (ps Problems) Warnings() Problems {
	var out Problems
	for _, p := range ps {
		if p.Severity == SeverityWarning {
			out = append(out, p)
		}
	}
	return out
}

// Err is nil when there is no error; otherwise an error listing them all.
func (ps Problems) Err() error {
	errs := ps.Errors()
	if len(errs) == 0 {
		return nil
	}
	return &ValidationError{Problems: errs}
}

// ValidationError carries every error of a load.
type ValidationError struct{ Problems Problems }

func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return fmt.Sprintf("%d configuration error(s):\n  %s", len(lines), strings.Join(lines, "\n  "))
}

// document is a parsed YAML file with the line of every path in it.
type document struct {
	file  string
	root  *yaml.Node
	lines map[string]int
}

func (d *document) line(path string) int {
	for p := path; p != ""; {
		if l, ok := d.lines[p]; ok {
			return l
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 0
}

// parseStrict parses a YAML file into out, reporting unknown fields with
// their path and a suggestion, and type errors with their line.
func parseStrict(file string, data []byte, out any) (*document, Problems) {
	doc := &document{file: file, lines: map[string]int{}}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return doc, Problems{{File: file, Message: "the file is empty", Fix: "write the configuration"}}
		}
		return doc, Problems{{File: file, Line: yamlErrorLine(err), Message: "not valid YAML: " + cleanYAMLError(err)}}
	}
	body := &root
	if body.Kind == yaml.DocumentNode && len(body.Content) == 1 {
		body = body.Content[0]
	}
	doc.root = body
	var problems Problems
	c := &checker{doc: doc, problems: &problems}
	c.check(body, reflect.TypeOf(out).Elem(), "")
	if err := body.Decode(out); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			for _, e := range te.Errors {
				problems = append(problems, Problem{File: file, Line: yamlErrorLine(errors.New(e)), Message: cleanYAMLError(errors.New(e))})
			}
		} else {
			problems = append(problems, Problem{File: file, Line: yamlErrorLine(err), Message: cleanYAMLError(err)})
		}
	}
	return doc, problems
}

var lineRE = regexp.MustCompile(`line (\d+)`)

func yamlErrorLine(err error) int {
	m := lineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return 0
	}
	return n
}

func cleanYAMLError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = lineRE.ReplaceAllString(msg, "")
	msg = strings.TrimLeft(msg, ": ")
	msg = strings.ReplaceAll(msg, "unmarshal errors:\n", "")
	return strings.TrimSpace(msg)
}

// checker walks a YAML node against a Go type, recording the line of each
// path and reporting keys the type does not know.
type checker struct {
	doc      *document
	problems *Problems
}

var (
	anyType      = reflect.TypeOf((*any)(nil)).Elem()
	manifestType = reflect.TypeOf(Manifest{})
	sourceType   = reflect.TypeOf(ParamSource{})
	durationType = reflect.TypeOf(Duration{})
)

func (c *checker) check(n *yaml.Node, t reflect.Type, path string) {
	if n == nil {
		return
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if path != "" {
		if _, ok := c.doc.lines[path]; !ok {
			c.doc.lines[path] = n.Line
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case anyType, durationType:
		return
	case manifestType:
		if n.Kind == yaml.MappingNode && len(n.Content) == 2 && n.Content[0].Value == "ref" {
			c.doc.lines[path+".ref"] = n.Content[1].Line
		}
		return
	case sourceType:
		if n.Kind == yaml.ScalarNode {
			return
		}
	}
	switch t.Kind() {
	case reflect.Struct:
		c.checkStruct(n, t, path)
	case reflect.Slice:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return
		}
		if n.Kind != yaml.SequenceNode {
			if t.Elem().Kind() != reflect.Uint8 {
				c.add(path, n.Line, "must be a list", "write it as a YAML sequence (- item)")
			}
			return
		}
		for i, e := range n.Content {
			c.check(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				c.doc.lines[joinPath(path, n.Content[i].Value)] = n.Content[i].Line
				c.check(n.Content[i+1], t.Elem(), joinPath(path, n.Content[i].Value))
			}
		}
	}
}

// checkStruct checks a mapping against the yaml fields of struct type t.
func (c *checker) checkStruct(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return
		}
		c.add(path, n.Line, fmt.Sprintf("must be a mapping (fields: %s)", strings.Join(yamlFields(t), ", ")), "")
		return
	}
	fields := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if name != "" && name != "-" {
			fields[name] = f
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		f, ok := fields[key.Value]
		child := joinPath(path, key.Value)
		if !ok {
			fix := "remove it"
			if s := closest(key.Value, yamlFields(t)); s != "" {
				fix = fmt.Sprintf("did you mean %q?", s)
			}
			c.add(child, key.Line, fmt.Sprintf("unknown field %q; fields here are %s", key.Value, strings.Join(yamlFields(t), ", ")), fix)
			continue
		}
		c.doc.lines[child] = key.Line
		c.check(val, f.Type, child)
	}
}

func (c *checker) add(path string, line int, msg, fix string) {
	*c.problems = append(*c.problems, Problem{File: c.doc.file, Line: line, Path: path, Message: msg, Fix: fix})
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func yamlFields(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		name := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// closest suggests the known name nearest to a misspelling.
func closest(s string, options []string) string {
	best, bestD := "", 3
	for _, o := range options {
		if d := distance(strings.ToLower(s), strings.ToLower(o)); d < bestD {
			best, bestD = o, d
		}
	}
	return best
}

func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Options tune loading.
type Options struct {
	// Mounts map a directory where a deployment mounts files (the upstream
	// Helm chart mounts task files under /etc/adapter) to a local
	// directory. /etc/adapter maps to the task config's own directory
	// unless set.
	Mounts map[string]string
}

// DefaultMount is where upstream's chart mounts manifest files.
const DefaultMount = "/etc/adapter"

// Bundle is a loaded adapter: its two configs and the files they refer to.
type Bundle struct {
	AdapterFile string
	TaskFile    string
	Adapter     *AdapterConfig
	Task        *TaskConfig
	// Refs holds the content of every manifest.ref and build_ref, by the
	// path written in the config.
	Refs map[string]string
	// RefFiles records where each ref was found locally.
	RefFiles   map[string]string
	adapterDoc *document
	taskDoc    *document
}

// Load reads and validates an adapter's configuration. The bundle is
// returned even with problems (for tooling); use problems.Err() to decide.
// adapterFile may be empty: the adapter is then named after the task file.
func Load(adapterFile, taskFile string, opts Options) (*Bundle, Problems) {
	var adapterData []byte
	var problems Problems
	if adapterFile != "" {
		data, err := os.ReadFile(adapterFile)
		if err != nil {
			problems = append(problems, Problem{File: adapterFile, Message: "cannot read the adapter config: " + err.Error(), Fix: "check the --config path"})
		}
		adapterData = data
	}
	taskData, err := os.ReadFile(taskFile)
	if err != nil {
		b := &Bundle{AdapterFile: adapterFile, TaskFile: taskFile, Adapter: &AdapterConfig{}, Task: &TaskConfig{}, Refs: map[string]string{}, RefFiles: map[string]string{}}
		return b, append(problems, Problem{File: taskFile, Message: "cannot read the task config: " + err.Error(), Fix: "check the --task-config path"})
	}
	b, ps := Parse(adapterFile, adapterData, taskFile, taskData, opts)
	return b, append(problems, ps...)
}

// Parse is Load on contents already read; the file names are used in
// messages and to resolve relative refs.
func Parse(adapterFile string, adapterData []byte, taskFile string, taskData []byte, opts Options) (*Bundle, Problems) {
	b := &Bundle{AdapterFile: adapterFile, TaskFile: taskFile, Adapter: &AdapterConfig{}, Task: &TaskConfig{},
		Refs: map[string]string{}, RefFiles: map[string]string{}}
	var problems Problems
	if adapterFile != "" && adapterData != nil {
		doc, ps := parseStrict(adapterFile, adapterData, b.Adapter)
		b.adapterDoc = doc
		problems = append(problems, ps...)
	}
	doc, ps := parseStrict(taskFile, taskData, b.Task)
	b.taskDoc = doc
	problems = append(problems, ps...)
	if len(problems.Errors()) > 0 {
		// Structure is broken; semantic checks would only add noise.
		return b, problems
	}
	mounts := map[string]string{DefaultMount: filepath.Dir(taskFile)}
	for k, v := range opts.Mounts {
		mounts[strings.TrimSuffix(k, "/")] = v
	}
	problems = append(problems, newValidator(b, mounts).run()...)
	return b, problems
}

// ResolveRef finds the local file behind a ref: as written; under a mapped
// mount; relative to the task config. Under a mount the file may carry the
// upstream chart's "adapter-task-resource-" prefix (job.yaml may be
// adapter-task-resource-job.yaml).
func ResolveRef(ref, taskFile string, mounts map[string]string) (string, []string) {
	var tried []string
	try := func(p string) bool {
		tried = append(tried, p)
		st, err := os.Stat(p)
		return err == nil && !st.IsDir()
	}
	for mount, local := range mounts {
		if rel, ok := strings.CutPrefix(ref, mount+"/"); ok {
			for _, cand := range []string{filepath.Join(local, rel), filepath.Join(local, filepath.Dir(rel), "adapter-task-resource-"+filepath.Base(rel))} {
				if try(cand) {
					return cand, tried
				}
			}
		}
	}
	if filepath.IsAbs(ref) {
		if try(ref) {
			return ref, tried
		}
	} else if cand := filepath.Join(filepath.Dir(taskFile), ref); try(cand) {
		return cand, tried
	}
	return "", tried
}
