package taskconfig

import (
	"fmt"
	"strings"

	"github.com/hyperfleet/hyperfleet/adapter/fieldpath"
)

func (v *validator) param(doc *document, path string, p *Param, sc scope) {
	s := p.Source
	set := 0
	for _, on := range []bool{s.Path != "", s.APICall != nil, s.Expression != "", s.File != nil} {
		if on {
			set++
		}
	}
	switch {
	case set == 0:
		v.errorf(doc, path+".source", "set source: event.<field>, env.<NAME>, secret.<ns>.<name>.<key>, configmap.<ns>.<name>.<key>, <param>.<path>, or a mapping with api_call, expression or file",
			"param %q has no source", p.Name)
	case set > 1:
		v.errorf(doc, path+".source", "keep one of them", "source sets more than one of path, api_call, expression and file")
	}
	switch p.Type {
	case "", TypeString, TypeInt, TypeInt64, TypeFloat, TypeFloat64, TypeBool:
	default:
		v.errorf(doc, path+".type", "use string, int, int64, float, float64 or bool", "unknown type %q", p.Type)
	}
	if p.Default != nil && p.Type != "" {
		if _, err := Convert(NormalizedCopy(p.Default), p.Type); err != nil {
			v.errorf(doc, path+".default", "make the default match the type", "default %v: %v", p.Default, err)
		}
	}
	switch {
	case s.Path != "":
		v.sourcePath(doc, path+".source", s.Path, sc)
	case s.APICall != nil:
		v.apiCall(doc, path+".source.api_call", s.APICall, sc)
	case s.Expression != "":
		v.compile(doc, path+".source.expression", s.Expression, sc)
	case s.File != nil:
		if !strings.HasPrefix(s.File.Path, "/") {
			v.errorf(doc, path+".source.file.path", "use an absolute path", "file path %q must be absolute", s.File.Path)
		}
	}
}

func (v *validator) sourcePath(doc *document, path, src string, sc scope) {
	head, rest, _ := strings.Cut(src, ".")
	switch head {
	case "event":
		if rest == "" {
			v.errorf(doc, path, "name a field of the event, e.g. event.id", "source %q names no event field", src)
		}
	case "env":
		if rest == "" {
			v.errorf(doc, path, "name a variable, e.g. env.REGION", "source %q names no environment variable", src)
		}
	case "secret", "configmap":
		if parts := strings.SplitN(rest, ".", 3); len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			v.errorf(doc, path, fmt.Sprintf("write %s.<namespace>.<name>.<key>", head), "source %q must name a namespace, a %s and a key", src, head)
		}
	default:
		if !sc[head] || reserved[head] {
			v.errorf(doc, path, "use event., env., secret., configmap., or the name of an earlier param",
				"source %q: %q is neither a source prefix nor a param defined before this one%s", src, head, suggest(head, sc))
			return
		}
		if rest != "" {
			if err := fieldpath.Validate(rest); err != nil {
				v.errorf(doc, path, "fix the path", "source %q: %v", src, err)
			}
		}
	}
}
