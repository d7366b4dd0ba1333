package topology

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func replica(name string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, name+" "+r.Method+" "+r.URL.RequestURI()+" "+string(b))
	}))
}

func get(t *testing.T, h http.Handler, method, path, body string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	return rec.Code, rec.Body.String()
}

// Requests alternate between the replicas, with path, query and body
// intact.
func TestBalancerAlternates(t *testing.T) {
	a, b := replica("a"), replica("b")
	defer a.Close()
	defer b.Close()
	lb, err := NewBalancer([]string{a.URL, b.URL})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i := 0; i < 4; i++ {
		code, body := get(t, lb, http.MethodPut, "/api/x?y=1", "report")
		if code != http.StatusOK || !strings.HasSuffix(body, " PUT /api/x?y=1 report") {
			t.Fatalf("answer %d %q", code, body)
		}
		seen[body[:1]]++
	}
	if seen["a"] != 2 || seen["b"] != 2 {
		t.Errorf("requests per replica = %v, want 2 each", seen)
	}
}

// A replica that is down (nothing listens) is skipped, for every method:
// the request never reached it.
func TestBalancerSkipsADownReplica(t *testing.T) {
	a := replica("a")
	defer a.Close()
	down := replica("down")
	down.Close()
	lb, err := NewBalancer([]string{down.URL, a.URL})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		code, body := get(t, lb, http.MethodPost, "/api/clusters", "{}")
		if code != http.StatusOK || !strings.HasPrefix(body, "a POST") {
			t.Fatalf("attempt %d: %d %q, want the live replica's answer", i, code, body)
		}
	}
}

// With every replica down the client gets a problem+json 503 with
// Retry-After, as from the API itself when it cannot serve.
func TestBalancerAllDown(t *testing.T) {
	down := replica("down")
	down.Close()
	lb, err := NewBalancer([]string{down.URL})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	lb.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/clusters", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" ||
		rec.Header().Get("Content-Type") != "application/problem+json" || !strings.Contains(rec.Body.String(), "HYPERFLEET-SVC-001") {
		t.Errorf("answer %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
}

func TestBalancerRefusesBadReplicas(t *testing.T) {
	for _, in := range [][]string{nil, {"not a url"}, {"http://"}} {
		if _, err := NewBalancer(in); err == nil {
			t.Errorf("NewBalancer(%q) accepted", in)
		}
	}
}

func TestIdempotentMethods(t *testing.T) {
	for m, want := range map[string]bool{http.MethodGet: true, http.MethodPut: true, http.MethodDelete: true, http.MethodPost: false, http.MethodPatch: false} {
		if idempotent(m) != want {
			t.Errorf("idempotent(%s) = %t", m, !want)
		}
	}
}
