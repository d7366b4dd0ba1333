package taskconfig

import (
	"fmt"
	"strings"

	"github.com/hyperfleet/hyperfleet/adapter/fieldpath"
)

func (v *validator) precondition(doc *document, path string, pc *Precondition, sc scope, seenCap map[string]bool) scope {
	if pc.APICall == nil && len(pc.Conditions) == 0 && pc.Expression == "" {
		v.errorf(doc, path, "add an api_call (with capture), conditions or an expression", "precondition %q checks nothing", pc.Name)
	}
	if pc.APICall != nil {
		v.apiCall(doc, path+".api_call", pc.APICall, sc)
		if !identifierRE.MatchString(pc.Name) {
			v.warnf(doc, path+".name", "use an identifier to read the response as "+strings.ReplaceAll(pc.Name, "-", "_"),
				"precondition %q calls the API but its name is not an identifier: CEL cannot read its response", pc.Name)
		}
	}
	if len(pc.Capture) > 0 && pc.APICall == nil {
		v.errorf(doc, path+".capture", "add an api_call to capture from, or derive the value in params", "capture needs an api_call response")
	}
	inner := sc
	if pc.APICall != nil {
		inner = inner.with(pc.Name)
	}
	for j := range pc.Capture {
		c := &pc.Capture[j]
		cp := fmt.Sprintf("%s.capture[%d]", path, j)
		switch {
		case c.Name == "":
			v.errorf(doc, cp+".name", "give the capture a name", "capture name is required")
		case !identifierRE.MatchString(c.Name) || reserved[c.Name]:
			v.errorf(doc, cp+".name", "use letters, digits and '_'", "capture name %q is not a valid identifier", c.Name)
		case seenCap[c.Name]:
			v.errorf(doc, cp+".name", "use a unique name", "capture %q is defined twice", c.Name)
		case sc[c.Name]:
			v.warnf(doc, cp+".name", "rename it if the shadowing is not intended", "capture %q replaces the param of the same name from here on", c.Name)
		}
		seenCap[c.Name] = true
		switch {
		case c.Field != "" && c.Expression != "":
			v.errorf(doc, cp, "keep one of them", "field and expression are mutually exclusive")
		case c.Field == "" && c.Expression == "":
			v.errorf(doc, cp, "set field (a path into the response) or expression (CEL over the response)", "capture %q extracts nothing", c.Name)
		case c.Field != "":
			if err := fieldpath.Validate(c.Field); err != nil {
				v.errorf(doc, cp+".field", "fix the path", "%v", err)
			}
		default:
			if _, err := v.cel.CompileOpen(c.Expression, []string{pc.Name}); err != nil {
				v.errorf(doc, cp+".expression", "check parentheses, quoting and optional chaining (?.)", "CEL does not compile:%s", indentMsg(err.Error()))
			}
		}
		inner = inner.with(c.Name)
	}
	for j := range pc.Conditions {
		v.condition(doc, fmt.Sprintf("%s.conditions[%d]", path, j), &pc.Conditions[j], inner)
	}
	if pc.Expression != "" {
		v.compile(doc, path+".expression", pc.Expression, inner)
	}
	return inner
}

func (v *validator) condition(doc *document, path string, c *Condition, sc scope) {
	if c.Field == "" {
		v.errorf(doc, path+".field", "name the variable to check", "condition field is required")
	} else if err := fieldpath.Validate(c.Field); err != nil {
		v.errorf(doc, path+".field", "fix the path", "%v", err)
	} else if head := strings.FieldsFunc(c.Field, func(r rune) bool { return r == '.' || r == '[' })[0]; !sc[head] {
		v.errorf(doc, path+".field", "use a param or a capture defined before this condition", "%q is not a param or capture in scope here%s", head, suggest(head, sc))
	}
	if !c.Operator.Known() {
		fix := "use one of " + strings.Join(operatorNames(), ", ")
		if s := closest(string(c.Operator), operatorNames()); s != "" {
			fix = fmt.Sprintf("did you mean %q?", s)
		}
		v.errorf(doc, path+".operator", fix, "invalid operator %q", c.Operator)
		return
	}
	switch c.Operator {
	case OpIn, OpNotIn:
		if _, ok := c.Value.([]any); !ok {
			v.errorf(doc, path+".value", `write a list, e.g. value: ["us-east-1", "us-west-2"]`, "%s needs an array value", c.Operator)
		}
	case OpExists, OpNotExists:
		if c.Value != nil {
			v.warnf(doc, path+".value", "remove it", "%s takes no value; it is ignored", c.Operator)
		}
	case OpGreaterThan, OpLessThan, OpGreaterThanOrEqual, OpLessThanOrEqual:
		if _, ok := Number(c.Value); !ok {
			v.errorf(doc, path+".value", "use a number", "%s needs a numeric value, got %v", c.Operator, c.Value)
		}
	default:
		if c.Value == nil {
			v.errorf(doc, path+".value", "set the value to compare with", "%s needs a value", c.Operator)
		}
	}
}
