package resource

import "testing"

func TestConditionStatusValid(t *testing.T) {
	for _, tc := range []struct {
		status ConditionStatus
		valid  bool
	}{
		{StatusTrue, true},
		{StatusFalse, true},
		{StatusUnknown, true},
		{"", false},
		{"true", false}, // the contract's values are case-sensitive
		{"Maybe", false},
	} {
		if got := tc.status.Valid(); got != tc.valid {
			t.Errorf("ConditionStatus(%q).Valid() = %v, want %v", tc.status, got, tc.valid)
		}
	}
}
