package resource

import (
	"strings"
	"testing"
)

func TestCheckAdapterName(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"validation", true}, {"landing-zone", true}, {"cl-maestro.v2", true}, {strings.Repeat("a", 253), true},
		{"", false}, {"bad name", false}, {strings.Repeat("a", 300), false}, {"tab\there", false}, {"nul\x00", false},
	} {
		if err := CheckAdapterName(c.name); (err == nil) != c.ok {
			t.Errorf("CheckAdapterName(%.20q) = %v, want ok %v", c.name, err, c.ok)
		}
	}
}

// Issue 43: a kinds file whose required adapter no status report could
// name made a kind that never becomes Ready; it is refused at start.
func TestKindsRefuseAdapterNamesNoReportCarries(t *testing.T) {
	for _, bad := range []string{"bad name", strings.Repeat("x", 300)} {
		_, err := NewKinds("kinds.yaml", []Kind{{Kind: "Widget", Plural: "widgets", RequiredAdapters: []string{bad}}})
		if err == nil || !strings.Contains(err.Error(), "required_adapters of kind Widget") {
			t.Errorf("required adapter %.20q: %v, want a refusal naming required_adapters", bad, err)
		}
		_, err = NewKinds("kinds.yaml", []Kind{{Kind: "Widget", Plural: "widgets", OptionalAdapters: []string{bad}}})
		if err == nil || !strings.Contains(err.Error(), "optional_adapters of kind Widget") {
			t.Errorf("optional adapter %.20q: %v, want a refusal naming optional_adapters", bad, err)
		}
	}
}
