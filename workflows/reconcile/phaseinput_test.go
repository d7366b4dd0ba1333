package reconcile

import (
	"encoding/json"
	"testing"
)

func TestPhaseInputReadsTypedAndBareStates(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
	}{
		{"typed input", `{"state":{"params":{"a":1}}}`, `{"params":{"a":1}}`},
		{"bare state scheduled before PhaseInput", `{"params":{"a":1},"trace":{}}`, `{"params":{"a":1},"trace":{}}`},
		{"a bare state whose only field is not state", `{"params":{}}`, `{"params":{}}`},
		{"not an object: handed on for the activity to refuse", `"not a state"`, `"not a state"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var in PhaseInput
			if err := json.Unmarshal([]byte(c.in), &in); err != nil {
				t.Fatalf("Unmarshal(%s): %v", c.in, err)
			}
			if string(in.State) != c.want {
				t.Errorf("Unmarshal(%s).State = %s, want %s", c.in, in.State, c.want)
			}
		})
	}
	var in PhaseInput
	if err := in.UnmarshalJSON([]byte(`{"state":`)); err == nil {
		t.Error("truncated JSON was accepted")
	}
}
