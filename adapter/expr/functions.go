package expr

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

func (e *Engine) functions() []cel.EnvOption {
	dyn, str, integer := cel.DynType, cel.StringType, cel.IntType
	return []cel.EnvOption{
		cel.Function("now",
			cel.Overload("now_string", nil, str,
				cel.FunctionBinding(func(...ref.Val) ref.Val {
					return types.String(e.clock.Now().UTC().Format(time.RFC3339))
				}))),
		cel.Function("toJson",
			cel.Overload("toJson_dyn", []*cel.Type{dyn}, str,
				cel.UnaryBinding(func(v ref.Val) ref.Val {
					n, err := ToNative(v)
					if err != nil {
						return types.NewErr("toJson: %v", err)
					}
					b, err := json.Marshal(n)
					if err != nil {
						return types.NewErr("toJson: %v", err)
					}
					return types.String(b)
				}))),
		cel.Function("dig",
			cel.Overload("dig_dyn_string", []*cel.Type{dyn, str}, dyn,
				cel.BinaryBinding(func(v, path ref.Val) ref.Val {
					n, err := ToNative(v)
					if err != nil {
						return types.NullValue
					}
					return types.DefaultTypeAdapter.NativeToValue(Dig(n, string(path.(types.String))))
				}))),
		cel.Function("conditionStatus",
			cel.Overload("conditionStatus_list_string", []*cel.Type{dyn, str}, str,
				cel.BinaryBinding(func(conds, typ ref.Val) ref.Val {
					c := findCondition(conds, string(typ.(types.String)))
					if s, ok := c["status"].(string); ok {
						return types.String(s)
					}
					return types.String("Unknown")
				}))),
		cel.Function("conditionAge",
			cel.Overload("conditionAge_list_string", []*cel.Type{dyn, str}, integer,
				cel.BinaryBinding(func(conds, typ ref.Val) ref.Val {
					return types.Int(e.conditionAge(findCondition(conds, string(typ.(types.String)))))
				}))),
		cel.Function("stableFor",
			cel.Overload("stableFor_list_string_int", []*cel.Type{dyn, str, integer}, cel.BoolType,
				cel.FunctionBinding(func(args ...ref.Val) ref.Val {
					c := findCondition(args[0], string(args[1].(types.String)))
					age := e.conditionAge(c)
					status, _ := c["status"].(string)
					return types.Bool(status == "True" && age >= 0 && age >= int64(args[2].(types.Int)))
				}))),
		cel.Function("statusFeedbackValue",
			cel.Overload("statusFeedbackValue_dyn_string", []*cel.Type{dyn, str}, str,
				cel.BinaryBinding(func(feedback, name ref.Val) ref.Val {
					return types.String(StatusFeedbackValue(feedback, string(name.(types.String))))
				}))),
		cel.Function("triState",
			cel.Overload("triState_bool_bool", []*cel.Type{cel.BoolType, cel.BoolType}, str,
				cel.BinaryBinding(func(isTrue, isFalse ref.Val) ref.Val {
					switch {
					case isTrue == types.True:
						return types.String("True")
					case isFalse == types.True:
						return types.String("False")
					}
					return types.String("Unknown")
				}))),
	}
}

// findCondition returns the condition of the given type from a Kubernetes-
// or HyperFleet-style conditions list, or nil.
func findCondition(conds ref.Val, typ string) map[string]any {
	n, err := ToNative(conds)
	if err != nil {
		return nil
	}
	list, _ := n.([]any)
	for _, item := range list {
		if m, ok := item.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// conditionAge is whole seconds since the condition's last transition, -1
// when the condition or a parseable time is missing.
func (e *Engine) conditionAge(c map[string]any) int64 {
	if c == nil {
		return -1
	}
	raw, ok := c["last_transition_time"].(string)
	if !ok {
		raw, ok = c["lastTransitionTime"].(string)
	}
	if !ok {
		return -1
	}
	t, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return -1
	}
	return int64(e.clock.Now().Sub(t) / time.Second)
}

// StatusFeedbackValue reads the string value of a ManifestWork status
// feedback entry by name; feedback may be the statusFeedback object or its
// values list. "" when absent.
func StatusFeedbackValue(feedback ref.Val, name string) string {
	n, err := ToNative(feedback)
	if err != nil {
		return ""
	}
	var values []any
	switch x := n.(type) {
	case map[string]any:
		values, _ = x["values"].([]any)
	case []any:
		values = x
	}
	for _, v := range values {
		m, ok := v.(map[string]any)
		if !ok || m["name"] != name {
			continue
		}
		fv, _ := m["fieldValue"].(map[string]any)
		if s, ok := fv["string"].(string); ok {
			return s
		}
	}
	return ""
}

// Dig walks a dotted path through maps and list indexes ("a.b.0.c"); nil
// when any step is missing.
func Dig(v any, path string) any {
	if path == "" {
		return v
	}
	cur := v
	for _, seg := range strings.Split(path, ".") {
		switch x := cur.(type) {
		case map[string]any:
			next, ok := x[seg]
			if !ok {
				return nil
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			cur = x[i]
		default:
			return nil
		}
	}
	return cur
}

// ToNative converts a CEL value into plain Go values: map[string]any, []any,
// string, int64, uint64, float64, bool, nil; timestamps become RFC 3339
// strings and durations Go duration strings, so results serialise as JSON.
func ToNative(v ref.Val) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(x), nil
	case types.Int:
		return int64(x), nil
	case types.Uint:
		return uint64(x), nil
	case types.Double:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("the number %v has no JSON form", f)
		}
		return f, nil
	case types.String:
		return string(x), nil
	case types.Bytes:
		return []byte(x), nil
	case types.Timestamp:
		return x.Time.UTC().Format(time.RFC3339Nano), nil
	case types.Duration:
		return x.Duration.String(), nil
	case *types.Err:
		return nil, x
	case *types.Optional:
		if !x.HasValue() {
			return nil, nil
		}
		return ToNative(x.GetValue())
	}
	if m, ok := v.(traits.Mapper); ok {
		out := map[string]any{}
		it := m.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			nk, err := ToNative(k)
			if err != nil {
				return nil, err
			}
			nv, err := ToNative(m.Get(k))
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(nk)] = nv
		}
		return out, nil
	}
	if l, ok := v.(traits.Lister); ok {
		size := int(l.Size().(types.Int))
		out := make([]any, 0, size)
		for i := 0; i < size; i++ {
			nv, err := ToNative(l.Get(types.Int(i)))
			if err != nil {
				return nil, err
			}
			out = append(out, nv)
		}
		return out, nil
	}
	if v.Type() == types.TypeType {
		return v.(ref.Type).TypeName(), nil
	}
	n, err := v.ConvertToNative(reflect.TypeOf((*any)(nil)).Elem())
	if err != nil {
		return nil, fmt.Errorf("cannot use a CEL %s value here", v.Type().TypeName())
	}
	return n, nil
}
