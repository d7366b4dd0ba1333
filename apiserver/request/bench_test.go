package request

import "testing"

func BenchmarkDecodeStatusReport(b *testing.B) {
	body := []byte(`{"adapter":"validation","observed_generation":3,"observed_time":"2025-01-01T10:00:00Z",
		"conditions":[{"type":"Available","status":"True","reason":"Ok","message":"fine"},{"type":"Applied","status":"True"},{"type":"Health","status":"True"}],
		"data":{"namespace":{"name":"abc","status":"Active"}}}`)
	for b.Loop() {
		if _, p := DecodeStatusReport(body); p != nil {
			b.Fatal(p)
		}
	}
}
