package apiclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hyperfleet/hyperfleet/adapter/metrics"
)

func TestResolve(t *testing.T) {
	c, err := New(Config{BaseURL: "http://api:8000/", Version: "v2"})
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"/clusters/abc":                   "http://api:8000/api/hyperfleet/v2/clusters/abc",
		"clusters/abc/statuses":           "http://api:8000/api/hyperfleet/v2/clusters/abc/statuses",
		"/api/hyperfleet/v1/clusters/abc": "http://api:8000/api/hyperfleet/v1/clusters/abc",
		"http://elsewhere:9/x":            "http://elsewhere:9/x",
		"/clusters?search=name%3D%27a%27": "http://api:8000/api/hyperfleet/v2/clusters?search=name%3D%27a%27",
	} {
		got, err := c.Resolve(in)
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := New(Config{BaseURL: "CHANGE_ME"}); err == nil || !strings.Contains(err.Error(), "not an absolute URL") {
		t.Errorf("CHANGE_ME base URL: %v", err)
	}
	noBase, _ := New(Config{})
	if _, err := noBase.Resolve("/clusters"); err == nil || !strings.Contains(err.Error(), "base_url is not set") {
		t.Errorf("no base: %v", err)
	}
}

func TestEndpointLabel(t *testing.T) {
	for in, want := range map[string]string{
		"/clusters/{{ .clusterId }}/statuses":                            "/clusters/{clusterId}/statuses",
		"/api/hyperfleet/v1/clusters/{{ .clusterId }}":                   "/clusters/{clusterId}",
		"/clusters/{{ .clusterId }}/nodepools/{{ .nodepoolId | lower }}": "/clusters/{clusterId}/nodepools/{nodepoolId}",
		"http://invalid-service:8080/api/nonexistent":                    "/api/nonexistent",
	} {
		if got := EndpointLabel(in); got != want {
			t.Errorf("EndpointLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRetriesAndMetrics(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			w.WriteHeader(401)
			return
		}
		switch {
		case strings.HasSuffix(r.URL.Path, "/flaky") && n < 3:
			w.WriteHeader(503)
		case strings.HasSuffix(r.URL.Path, "/missing"):
			w.WriteHeader(404)
		default:
			w.Write([]byte(`{"ok":true}`))
		}
	}))
	defer srv.Close()
	token := filepath.Join(t.TempDir(), "token")
	os.WriteFile(token, []byte("s3cret\n"), 0o600)
	reg := prometheus.NewRegistry()
	c, _ := New(Config{AdapterName: "a", BaseURL: srv.URL, RetryAttempts: 3, BackoffBase: time.Millisecond, TokenPath: token, Metrics: metrics.New(reg)})

	resp, err := c.Do(context.Background(), Request{URL: "/flaky", Endpoint: "/flaky"})
	if err != nil || resp.StatusCode != 200 || resp.Attempts != 3 || string(resp.Body) != `{"ok":true}` {
		t.Fatalf("flaky: %+v %v", resp, err)
	}
	calls.Store(0)
	resp, err = c.Do(context.Background(), Request{Method: "get", URL: "/missing"})
	if err != nil || resp.StatusCode != 404 || resp.Attempts != 1 || calls.Load() != 1 {
		t.Fatalf("404 must not be retried: %+v %v (calls %d)", resp, err, calls.Load())
	}
	got, _ := testutil.GatherAndCount(reg, "hyperfleet_adapter_api_requests_total")
	if got != 3 { // 503, 200 and 404 series
		t.Errorf("%d request series, want 3", got)
	}

	dead, _ := New(Config{BaseURL: "http://127.0.0.1:1", RetryAttempts: 2, BackoffBase: time.Millisecond})
	if _, err := dead.Do(context.Background(), Request{URL: "/x"}); err == nil || !strings.Contains(err.Error(), "failed after 2 attempt(s)") {
		t.Errorf("unreachable API: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := dead.Do(ctx, Request{URL: "/x"}); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("cancelled: %v", err)
	}
}

func TestBackoff(t *testing.T) {
	c, _ := New(Config{BackoffBase: 100 * time.Millisecond})
	for _, tc := range []struct {
		kind string
		n    int
		want time.Duration
	}{
		{"exponential", 1, 100 * time.Millisecond}, {"exponential", 3, 400 * time.Millisecond}, {"exponential", 20, 10 * time.Second},
		{"linear", 3, 300 * time.Millisecond}, {"constant", 5, 100 * time.Millisecond},
	} {
		if got := c.delay(tc.kind, tc.n); got != tc.want {
			t.Errorf("delay(%s, %d) = %v, want %v", tc.kind, tc.n, got, tc.want)
		}
	}
}

// Contract: HyperFleet credentials (the bearer token, the system header
// and its secret) go to the configured API origin only, also when a
// redirect points elsewhere or a URL dresses another host up as the API.
func TestCredentialsGoOnlyToTheAPI(t *testing.T) {
	const secret = "system-secret-0123456789abcdef-0123456789"
	type seen struct{ auth, system string }
	var leaked atomic.Int32
	record := func(into *[]seen, other bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			*into = append(*into, seen{r.Header.Get("Authorization"), r.Header.Get("X-HyperFleet-System")})
			for _, vs := range r.Header {
				for _, v := range vs {
					if other && (strings.Contains(v, secret) || strings.Contains(v, "secret-token")) {
						leaked.Add(1)
					}
				}
			}
			w.WriteHeader(http.StatusOK)
		}
	}
	var atOther, atAPI []seen
	other := httptest.NewServer(record(&atOther, true))
	defer other.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/hyperfleet/v1/redirect" {
			http.Redirect(w, r, other.URL+"/stolen", http.StatusFound)
			return
		}
		record(&atAPI, false)(w, r)
	}))
	defer api.Close()
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("secret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{BaseURL: api.URL, TokenPath: token, Headers: [][2]string{{"X-HyperFleet-System", secret}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	apiHost := strings.TrimPrefix(api.URL, "http://")
	for _, u := range []string{
		"/clusters", api.URL + "/api/hyperfleet/v1/clusters", // the API
		other.URL + "/steal", "/redirect", // elsewhere, directly and by a redirect
		"http://" + apiHost + "@" + strings.TrimPrefix(other.URL, "http://") + "/userinfo", // the API's address as userinfo
	} {
		if _, err := c.Do(ctx, Request{URL: u}); err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
	}
	if len(atAPI) != 2 || atAPI[0] != (seen{"Bearer secret-token", secret}) || atAPI[1] != atAPI[0] {
		t.Errorf("the API saw %+v, want the token and the system secret on both calls", atAPI)
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("another origin received HyperFleet credentials in %d headers: %+v", n, atOther)
	}
	if len(atOther) != 2 {
		t.Errorf("the other origin saw %d calls, want the direct and the userinfo one (the redirect is not followed)", len(atOther))
	}
}
