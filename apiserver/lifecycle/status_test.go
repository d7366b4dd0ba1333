package lifecycle

import (
	"testing"

	"github.com/hyperfleet/hyperfleet/resource"
)

func TestFirstPassDone(t *testing.T) {
	at := func(adapter string, gen int64) resource.AdapterStatus {
		return resource.AdapterStatus{Adapter: adapter, ObservedGeneration: gen}
	}
	registered := []string{"validation", "landing-zone", "job"}
	tests := []struct {
		name       string
		registered []string
		report     resource.AdapterStatus
		statuses   []resource.AdapterStatus
		done       bool
	}{
		{"first of three reports", registered, at("validation", 1), nil, false},
		{"second of three reports", registered, at("landing-zone", 1), []resource.AdapterStatus{at("validation", 1)}, false},
		{"last of three reports", registered, at("job", 1),
			[]resource.AdapterStatus{at("validation", 1), at("landing-zone", 1)}, true},
		{"the report replaces its adapter's older status", registered, at("job", 2),
			[]resource.AdapterStatus{at("validation", 2), at("landing-zone", 3), at("job", 1)}, true},
		{"another adapter still at an older generation", registered, at("job", 2),
			[]resource.AdapterStatus{at("validation", 2), at("landing-zone", 1)}, false},
		{"an optional adapter's status does not stand in for a registered one", registered, at("job", 1),
			[]resource.AdapterStatus{at("validation", 1), at("optional-dns", 1)}, false},
		{"a kind with only optional adapters is done at once", nil, at("optional-dns", 1), nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := firstPassDone(tc.registered, tc.report, tc.statuses); got != tc.done {
				t.Errorf("firstPassDone = %v, want %v", got, tc.done)
			}
		})
	}
}
