package api

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// An error never echoes a long path whole: the problem's instance and a
// 404's detail are cut (a 900 KB URL made a 900 KB 404).
func TestErrorPathsTruncated(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		for _, path := range []string{
			base + "/" + strings.Repeat("x", 60_000),
			base + "/clusters/" + strings.Repeat("0", 60_000),
			"/" + strings.Repeat("y", 900_000),
		} {
			resp, err := http.Get(e.url + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode < 400 || resp.StatusCode >= 500 || len(body) > 2048 {
				t.Errorf("GET of a %d-byte path: %d with %d bytes: %.300s", len(path), resp.StatusCode, len(body), body)
			}
			r := &response{t: t, method: "GET", path: path[:40], status: resp.StatusCode, header: resp.Header, body: body}
			var p problemDoc
			r.into(&p)
			if p.Code == "" || len(p.Instance) > 300 || !strings.HasSuffix(p.Instance, "...") {
				t.Errorf("%d-byte path: instance %.80q (%d bytes), code %s", len(path), p.Instance, len(p.Instance), p.Code)
			}
		}
		e.do("PATCH", base+"/"+strings.Repeat("z", 10_000), `{}`).problem(404, "HYPERFLEET-NTF-002")
	})
}
