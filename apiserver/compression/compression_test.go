package compression

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/resource"
)

func TestAcceptsGzip(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   bool
	}{
		{"", false},
		{"gzip", true},
		{"GZIP", true},
		{"x-gzip", true},
		{"deflate, gzip;q=1.0, *;q=0.5", true},
		{"br;q=1, gzip;q=0.001", true},
		{"gzip;q=0", false},
		{"gzip; q=0.000", false},
		{"gzip;Q=0", false},
		{"gzip;q=0, *", false},
		{"*", true},
		{"*;q=0", false},
		{"*;q=0, gzip", true},
		{"identity", false},
		{"deflate, br", false},
		{"gzip;q=abc", false},
		{"gzip;q=2", false},
		{"gzip;q=1.5", false},
		{"gzip;q=0.12345", false},
		{"gzip;q=", false},
		{"gzip;level=9", true},
		{"gzip;q=0.5;level=9", true},
		{"gzipped", false},
		{" , ,gzip", true},
		{"gzip;q=0,gzip;q=1", true},
	} {
		if got := AcceptsGzip(tc.header); got != tc.want {
			t.Errorf("AcceptsGzip(%q) = %v, want %v", tc.header, got, tc.want)
		}
	}
}

// serve runs a handler behind a Writer and returns what the client got.
func serve(t *testing.T, h func(w http.ResponseWriter)) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	z := NewWriter(rec)
	h(z)
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return rec
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWriterCompressesLargeBodies(t *testing.T) {
	body := bytes.Repeat([]byte(`{"kind":"Cluster","name":"c"},`), 1000)
	for _, chunk := range []int{len(body), 100, 7 << 10, MinSize} {
		rec := serve(t, func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			w.WriteHeader(http.StatusOK)
			for rest := body; len(rest) > 0; {
				n := min(chunk, len(rest))
				if _, err := w.Write(rest[:n]); err != nil {
					t.Fatal(err)
				}
				rest = rest[n:]
			}
		})
		if rec.Code != 200 || rec.Header().Get("Content-Encoding") != "gzip" || rec.Header().Get("Vary") != "Accept-Encoding" {
			t.Fatalf("chunk %d: status %d, headers %v", chunk, rec.Code, rec.Header())
		}
		if cl := rec.Header().Get("Content-Length"); cl != "" {
			t.Errorf("chunk %d: Content-Length %s kept on a compressed body", chunk, cl)
		}
		if rec.Body.Len() >= len(body)/10 {
			t.Errorf("chunk %d: %d bytes compressed to %d", chunk, len(body), rec.Body.Len())
		}
		if got := gunzip(t, rec.Body.Bytes()); !bytes.Equal(got, body) {
			t.Errorf("chunk %d: decompressed %d bytes, want the %d sent", chunk, len(got), len(body))
		}
	}
}

func TestWriterLeavesResponsesAlone(t *testing.T) {
	large := strings.Repeat("x", MinSize)
	for _, tc := range []struct {
		name   string
		h      func(w http.ResponseWriter)
		status int
		body   string
	}{
		{"under MinSize", func(w http.ResponseWriter) {
			w.WriteHeader(201)
			_, _ = io.WriteString(w, large[1:])
		}, 201, large[1:]},
		{"already encoded", func(w http.ResponseWriter) {
			w.Header().Set("Content-Encoding", "br")
			_, _ = io.WriteString(w, large)
		}, 200, large},
		{"an event stream", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, large)
		}, 200, large},
		{"a problem", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(400)
			_, _ = io.WriteString(w, large)
		}, 400, large},
		{"no content", func(w http.ResponseWriter) { w.WriteHeader(204) }, 204, ""},
		{"not modified", func(w http.ResponseWriter) {
			w.WriteHeader(304)
			_, _ = io.WriteString(w, large)
		}, 304, large},
		{"flushed before MinSize", func(w http.ResponseWriter) {
			_, _ = io.WriteString(w, "event 1\n")
			_ = w.(*Writer).Flush()
			_, _ = io.WriteString(w, large)
		}, 200, "event 1\n" + large},
		{"nothing written", func(http.ResponseWriter) {}, 200, ""},
	} {
		rec := serve(t, tc.h)
		if rec.Code != tc.status || rec.Body.String() != tc.body {
			t.Errorf("%s: status %d body of %d bytes, want %d and %d bytes", tc.name, rec.Code, rec.Body.Len(), tc.status, len(tc.body))
		}
		if ce := rec.Header().Get("Content-Encoding"); ce == "gzip" {
			t.Errorf("%s: compressed", tc.name)
		}
	}
}

// Pooled writers and compressors are reset: a body never leaks into the
// next response.
func TestWriterReuse(t *testing.T) {
	for i := range 20 {
		body := strings.Repeat(fmt.Sprintf("response %d ", i), 2000)
		rec := serve(t, func(w http.ResponseWriter) { _, _ = io.WriteString(w, body) })
		if got := gunzip(t, rec.Body.Bytes()); string(got) != body {
			t.Fatalf("response %d: got %d bytes, want %d", i, len(got), len(body))
		}
		small := fmt.Sprintf("small %d", i)
		if rec := serve(t, func(w http.ResponseWriter) { _, _ = io.WriteString(w, small) }); rec.Body.String() != small {
			t.Fatalf("response %d: got %q, want %q", i, rec.Body.String(), small)
		}
	}
}

// page is a list of n clusters as the API writes it.
func page(tb testing.TB, n int) []byte {
	tb.Helper()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	buf := []byte(`{"kind":"ClusterList","page":1,"size":100,"total":100000,"items":[`)
	for i := range n {
		if i > 0 {
			buf = append(buf, ',')
		}
		id := fmt.Sprintf("0190c0de-0000-7000-8000-%012d", i)
		r := resource.Resource{
			Kind: "Cluster", ID: id, Href: resource.ClusterHref(id), Name: fmt.Sprintf("cluster-%06d", i), Generation: int64(i%5 + 1),
			Spec:   json.RawMessage(fmt.Sprintf(`{"region":"us-east-%d","nodes":%d,"platform":{"type":"gcp","project":"p-%d"}}`, i%4, i%50+1, i)),
			Labels: map[string]string{"environment": "production", "shard": fmt.Sprint(i % 16)}, CreatedTime: now.Add(time.Duration(i) * time.Second),
			UpdatedTime: now.Add(time.Duration(i) * time.Minute), CreatedBy: "alice@example.com", UpdatedBy: "alice@example.com",
		}
		for _, c := range []string{"Ready", "Reconciled", "Available", "LastKnownReconciled", "ValidationSuccessful"} {
			r.Status.Conditions = append(r.Status.Conditions, resource.Condition{Type: c, Status: "True", Reason: "AllAdaptersReported",
				ObservedGeneration: r.Generation, CreatedTime: now, LastUpdatedTime: now.Add(time.Duration(i) * time.Millisecond), LastTransitionTime: now})
		}
		var err error
		if buf, err = r.AppendJSON(buf); err != nil {
			tb.Fatal(err)
		}
	}
	return append(buf, "]}"...)
}

// BenchmarkGzip100Items compresses a 100-item page of clusters, written in
// 32 KiB chunks as the API writes lists, through a Writer (the level the
// API uses, pooled compressors); and, for comparison, at the default
// level with one compressor reused.
func BenchmarkGzip100Items(b *testing.B) {
	body := page(b, 100)
	report := func(b *testing.B, out countingWriter) {
		b.ReportMetric(float64(len(body)), "bytes-in")
		b.ReportMetric(float64(out), "bytes-out")
	}
	b.Run("writer", func(b *testing.B) {
		var sink countingWriter
		w := newDiscard(&sink)
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			sink = 0
			clear(w.h)
			z := NewWriter(w)
			for rest := body; len(rest) > 0; {
				n := min(32<<10, len(rest))
				_, _ = z.Write(rest[:n])
				rest = rest[n:]
			}
			_ = z.Close()
		}
		report(b, sink)
	})
	b.Run("default-level", func(b *testing.B) {
		var sink countingWriter
		zw, _ := gzip.NewWriterLevel(&sink, gzip.DefaultCompression)
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			sink = 0
			zw.Reset(&sink)
			_, _ = zw.Write(body)
			_ = zw.Close()
		}
		report(b, sink)
	})
}

type countingWriter int

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// discard is a response writer that counts the body.
type discard struct {
	w *countingWriter
	h http.Header
}

func newDiscard(w *countingWriter) *discard    { return &discard{w: w, h: http.Header{}} }
func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return d.w.Write(p) }
func (d *discard) WriteHeader(int)             {}

// BenchmarkWriterSmall is what a client that accepts gzip adds to a
// single-resource GET: a pooled writer holding a 1.5 KiB body back and
// sending it as it is.
func BenchmarkWriterSmall(b *testing.B) {
	body := page(b, 1)
	var sink countingWriter
	w := newDiscard(&sink)
	b.ReportAllocs()
	for b.Loop() {
		z := NewWriter(w)
		_, _ = z.Write(body)
		_ = z.Close()
	}
}
