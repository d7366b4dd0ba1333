package executor

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
)

// Check evaluates one structured condition. found says whether the field
// exists at all; comparisons are numeric when both sides are numbers (or
// numeric text), textual otherwise.
func Check(operator taskconfig.Operator, actual any, found bool, value any) (bool, error) {
	present := found && actual != nil
	switch operator {
	case taskconfig.OpExists:
		return present, nil
	case taskconfig.OpNotExists:
		return !present, nil
	case taskconfig.OpEquals:
		return equal(actual, value), nil
	case taskconfig.OpNotEquals:
		return !equal(actual, value), nil
	case taskconfig.OpIn, taskconfig.OpNotIn:
		list, ok := value.([]any)
		if !ok {
			return false, fmt.Errorf("%s needs an array value", operator)
		}
		in := false
		for _, v := range list {
			in = in || equal(actual, v)
		}
		return in == (operator == taskconfig.OpIn), nil
	case taskconfig.OpContains:
		switch a := actual.(type) {
		case string:
			return strings.Contains(a, text(value)), nil
		case []any:
			for _, e := range a {
				if equal(e, value) {
					return true, nil
				}
			}
			return false, nil
		case map[string]any:
			_, ok := a[text(value)]
			return ok, nil
		}
		return false, nil
	case taskconfig.OpGreaterThan, taskconfig.OpLessThan, taskconfig.OpGreaterThanOrEqual, taskconfig.OpLessThanOrEqual:
		a, okA := taskconfig.Number(actual)
		b, okB := taskconfig.Number(value)
		if !okB {
			return false, fmt.Errorf("%s needs a numeric value, got %v", operator, value)
		}
		if !okA {
			return false, nil // a missing or non-numeric field is never greater or less
		}
		switch operator {
		case taskconfig.OpGreaterThan:
			return a > b, nil
		case taskconfig.OpLessThan:
			return a < b, nil
		case taskconfig.OpGreaterThanOrEqual:
			return a >= b, nil
		default: // taskconfig.OpLessThanOrEqual, the last of the outer case
			return a <= b, nil
		}
	}
	return false, fmt.Errorf("unknown operator %q", operator)
}

func equal(a, b any) bool {
	_, aText := a.(string)
	_, bText := b.(string)
	if aText && bText {
		return a == b
	}
	if x, ok := taskconfig.Number(a); ok {
		if y, ok := taskconfig.Number(b); ok {
			return x == y
		}
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string, bool:
		return text(x) == text(b)
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	return fmt.Sprint(v)
}
