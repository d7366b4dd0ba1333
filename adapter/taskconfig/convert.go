package taskconfig

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Convert applies a param's type to a value, with the guide's conversions:
// int accepts integers, numeric strings and floats (truncated); float
// accepts numbers and numeric strings; bool accepts true/false, yes/no,
// on/off and 1/0; string accepts anything. An empty type means string for
// scalars and leaves objects and lists alone.
func Convert(v any, typ string) (any, error) {
	switch typ {
	case "":
		if _, ok := v.(string); ok || v == nil {
			return v, nil
		}
		switch v.(type) {
		case map[string]any, []any, int64, float64, bool:
			return v, nil
		}
		return toString(v), nil
	case TypeString:
		return toString(v), nil
	case TypeInt, TypeInt64:
		switch x := v.(type) {
		case int64:
			return x, nil
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) || x > math.MaxInt64 || x < math.MinInt64 {
				return nil, fmt.Errorf("%v does not fit an int", x)
			}
			return int64(x), nil
		case string:
			s := strings.TrimSpace(x)
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return i, nil
			}
			if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) && math.Abs(f) < math.MaxInt64 {
				return int64(f), nil
			}
			return nil, fmt.Errorf("%q is not a number", x)
		}
	case TypeFloat, TypeFloat64:
		if f, ok := Number(v); ok {
			return f, nil
		}
		if s, ok := v.(string); ok {
			return nil, fmt.Errorf("%q is not a number", s)
		}
	case TypeBool:
		switch x := v.(type) {
		case bool:
			return x, nil
		case int64:
			if x == 0 || x == 1 {
				return x == 1, nil
			}
		case float64:
			if x == 0 || x == 1 {
				return x == 1, nil
			}
		case string:
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "true", "yes", "on", "1":
				return true, nil
			case "false", "no", "off", "0":
				return false, nil
			}
			return nil, fmt.Errorf("%q is not a boolean (true/false, yes/no, on/off, 1/0)", x)
		}
	default:
		return nil, fmt.Errorf("unknown type %q", typ)
	}
	return nil, fmt.Errorf("cannot convert %T %v to %s", v, v, typ)
}

// Number reads a number, or numeric text, as a float64.
func Number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case float64:
		return x, true
	case string:
		s := strings.TrimSpace(x)
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil && s != ""
	}
	return 0, false
}

func toString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	case map[string]any, []any:
		b, _ := json.Marshal(x)
		return string(b)
	}
	return fmt.Sprint(v)
}
