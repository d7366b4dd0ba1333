package pagetoken

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/hyperfleet/hyperfleet/apiserver/search"
)

func encodeWire(t testing.TB, w wire) string {
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// FuzzDecode: no input panics, and whatever decodes is a position the
// keyset query accepts (values of the right type in the right number).
func FuzzDecode(f *testing.F) {
	q := Query("Cluster", "", "", byDeleted)
	for _, seed := range []string{
		"", "eyJ2IjoxfQ", "eyJ2Ijo5fQ",
		encodeWire(f, wire{V: 1, Q: q, P: 2, K: []*string{nil, ptr("3"), ptr("id")}}),
		encodeWire(f, wire{V: 1, Q: q, P: 7, K: strs("2026-11-23T14:00:00Z", "-9", "")}),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := Decode(s, q, byDeleted)
		if err != nil {
			return
		}
		if tok.Page < 2 {
			t.Fatalf("decoded page %d", tok.Page)
		}
		if _, err := search.After("resources", byDeleted, tok.After); err != nil {
			t.Fatalf("decoded %q into a position the query refuses: %v", s, err)
		}
	})
}
