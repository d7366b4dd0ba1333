package pagetoken

import (
	"testing"

	"github.com/hyperfleet/hyperfleet/apiserver/search"
)

// BenchmarkDecode is the per-request cost a token adds to a list.
func BenchmarkDecode(b *testing.B) {
	order := search.WithTieBreak(nil)
	q := Query("Cluster", "", "labels.shard='3'", order)
	s, err := Encode(q, 500, order, search.Cursor{when, "01a208ea-cc7b-7286-b9ad-01a9b568d500"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(s, Query("Cluster", "", "labels.shard='3'", order), order); err != nil {
			b.Fatal(err)
		}
	}
}
