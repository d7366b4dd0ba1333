package search

import "testing"

func BenchmarkTranslate(b *testing.B) {
	q := "status.conditions.Ready='True' and labels.environment in ('dev','staging') and spec.platform.type = 'gcp' and generation > 1"
	for b.Loop() {
		if _, err := Translate(q, Postgres, Options{Table: "resources"}); err != nil {
			b.Fatal(err)
		}
	}
}
