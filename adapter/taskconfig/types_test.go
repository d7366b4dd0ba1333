package taskconfig

import (
	"reflect"
	"sync"
	"testing"
)

func TestNormalizeConvertsWithoutWritingItsInput(t *testing.T) {
	in := map[string]any{
		"count":  int(3),
		"ratio":  float32(0.5),
		"nested": map[any]any{"k": int32(7)},
		"list":   []any{int(1), map[string]any{"u": uint64(9)}},
	}
	want := map[string]any{
		"count":  int64(3),
		"ratio":  float64(0.5),
		"nested": map[string]any{"k": int64(7)},
		"list":   []any{int64(1), map[string]any{"u": int64(9)}},
	}
	if got := NormalizedCopy(in); !reflect.DeepEqual(got, want) {
		t.Errorf("NormalizedCopy = %#v, want %#v", got, want)
	}
	// The input is a loaded config shared by concurrent runs: untouched.
	if _, ok := in["count"].(int); !ok {
		t.Errorf("input map was rewritten: count is %T", in["count"])
	}
	if _, ok := in["list"].([]any)[0].(int); !ok {
		t.Errorf("input slice was rewritten: list[0] is %T", in["list"].([]any)[0])
	}
}

// Concurrent adapter runs normalize the same payload definition; writing
// to it would be a fatal concurrent map write.
func TestNormalizeConcurrently(t *testing.T) {
	shared := map[string]any{"a": map[string]any{"b": []any{int(1), "x"}}, "c": int(2)}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 2000 {
				NormalizedCopy(shared)
			}
		})
	}
	wg.Wait()
}
