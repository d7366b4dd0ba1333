package aggregation

import (
	"fmt"
	"testing"

	"github.com/hyperfleet/hyperfleet/resource"
)

func BenchmarkCompute(b *testing.B) {
	for _, n := range []int{3, 20} {
		var registered []string
		var statuses []resource.AdapterStatus
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("adapter-%d", i)
			registered = append(registered, name)
			statuses = append(statuses, report(name, 2, "True"))
		}
		prev := Compute(Input{Kind: "Cluster", Generation: 2, Registered: registered, Statuses: statuses, Now: t1}).Conditions
		b.Run(fmt.Sprintf("%d adapters", n), func(b *testing.B) {
			for b.Loop() {
				Compute(Input{Kind: "Cluster", Generation: 2, Registered: registered, Statuses: statuses, Previous: prev, Now: t2})
			}
		})
	}
}
