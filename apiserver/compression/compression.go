// Package compression gzips HTTP responses for clients that ask for it:
// the Accept-Encoding negotiation, and a response writer that compresses
// a body once it reaches MinSize, with pooled compressors.
package compression

import (
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// MinSize is the smallest body compressed. Below it a response goes out as
// it is: gzipping a 1 KiB resource cost a quarter of the GET rate, for a
// few hundred bytes saved.
const MinSize = 8 << 10

// Level is the compressor's level. JSON lists compress about tenfold even
// at the fastest level; higher levels cost CPU for a few percent more
// (docs/benchmarks.md).
const Level = gzip.BestSpeed

// AcceptsGzip reports whether an Accept-Encoding value (the header's
// values joined by commas) accepts gzip: gzip or x-gzip with a non-zero
// q, or * with a non-zero q when gzip is not named. A q that does not
// parse counts as 0: nothing is sent that the client may not read.
func AcceptsGzip(accept string) bool {
	gzipQ, starQ := -1.0, -1.0
	for len(accept) > 0 {
		var item string
		item, accept, _ = strings.Cut(accept, ",")
		coding, params, _ := strings.Cut(item, ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != "gzip" && coding != "x-gzip" && coding != "*" {
			continue
		}
		q := qValue(params)
		if coding == "*" {
			starQ = max(starQ, q)
		} else {
			gzipQ = max(gzipQ, q)
		}
	}
	if gzipQ >= 0 {
		return gzipQ > 0
	}
	return starQ > 0
}

// qValue reads the q parameter of one coding: 1 when absent, 0 when it is
// not a weight (RFC 9110: 0 to 1 with at most three decimals).
func qValue(params string) float64 {
	for len(params) > 0 {
		var p string
		p, params, _ = strings.Cut(params, ";")
		name, value, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		value = strings.TrimSpace(value)
		if len(value) == 0 || len(value) > 5 || (value[0] != '0' && value[0] != '1') {
			return 0
		}
		q, err := strconv.ParseFloat(value, 64)
		if err != nil || q < 0 || q > 1 {
			return 0
		}
		return q
	}
	return 1
}

// Writer wraps a response: it holds the body back until MinSize bytes
// arrived or the handler finished, then sends it compressed, when the
// response may be, or as it is. It sends the status with the first bytes,
// so a decision can still set the headers. Get one with NewWriter, end it
// with Close.
type Writer struct {
	w      http.ResponseWriter
	status int
	buf    []byte
	zw     *gzip.Writer
	// decided: the headers are sent; zw is set when compressing.
	decided bool
}

var writers = sync.Pool{New: func() any { return &Writer{buf: make([]byte, 0, MinSize)} }}

var compressors = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(io.Discard, Level)
	return zw
}}

// NewWriter wraps w, for a request whose client accepts gzip.
func NewWriter(w http.ResponseWriter) *Writer {
	z := writers.Get().(*Writer)
	z.w, z.status, z.decided = w, 0, false
	return z
}

// Header is the wrapped response's header.
func (z *Writer) Header() http.Header { return z.w.Header() }

// WriteHeader records the status; it is sent with the first bytes.
func (z *Writer) WriteHeader(code int) {
	if !z.decided {
		z.status = code
	}
}

// Status is the status recorded or sent, 0 before any.
func (z *Writer) Status() int { return z.status }

// Pending reports whether a status or body is recorded but not yet sent.
func (z *Writer) Pending() bool { return !z.decided && (z.status != 0 || len(z.buf) > 0) }

// Write holds p back until the body reaches MinSize, then sends.
func (z *Writer) Write(p []byte) (int, error) {
	if !z.decided {
		if len(z.buf)+len(p) < MinSize {
			z.buf = append(z.buf, p...)
			return len(p), nil
		}
		if err := z.decide(true); err != nil {
			return 0, err
		}
	}
	if z.zw != nil {
		return z.zw.Write(p)
	}
	return z.w.Write(p)
}

// WriteString is Write of a string.
func (z *Writer) WriteString(s string) (int, error) {
	if !z.decided && len(z.buf)+len(s) < MinSize {
		z.buf = append(z.buf, s...)
		return len(s), nil
	}
	return z.Write([]byte(s))
}

// Flush sends what is held. A response flushed before it reached MinSize
// is a stream, whose parts must reach the client as they are written: it
// is never compressed.
func (z *Writer) Flush() error {
	if !z.decided {
		if err := z.decide(false); err != nil {
			return err
		}
	}
	if z.zw != nil {
		return z.zw.Flush()
	}
	return nil
}

// decide sends the headers, compressed when large is set and the response
// may be, and then the body held so far.
func (z *Writer) decide(large bool) error {
	z.decided = true
	h := z.w.Header()
	if large && Compressible(z.status, h) {
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
		h.Del("Content-Length")
		z.zw = compressors.Get().(*gzip.Writer)
		z.zw.Reset(z.w)
	}
	if z.status != 0 {
		z.w.WriteHeader(z.status)
	}
	if len(z.buf) == 0 {
		return nil
	}
	var err error
	if z.zw != nil {
		_, err = z.zw.Write(z.buf)
	} else {
		_, err = z.w.Write(z.buf)
	}
	z.buf = z.buf[:0]
	return err
}

// Compressible reports whether a response of this status and these
// headers may be compressed: not one without a body (204, 304, 1xx), not
// one already encoded (the Prometheus handler gzips its own), not a
// stream of events, and not an error document, which is small.
func Compressible(status int, h http.Header) bool {
	if status == http.StatusNoContent || status == http.StatusNotModified || (status != 0 && status < 200) {
		return false
	}
	if h.Get("Content-Encoding") != "" {
		return false
	}
	ct := h.Get("Content-Type")
	return !strings.HasPrefix(ct, "text/event-stream") && !strings.HasPrefix(ct, "application/problem+json")
}

// Close sends what is still held (a body under MinSize goes out as it
// is), ends the compressed stream and returns the writer to its pool. The
// Writer must not be used after.
func (z *Writer) Close() error {
	var err error
	if !z.decided {
		err = z.decide(false)
	}
	if z.zw != nil {
		if cerr := z.zw.Close(); err == nil {
			err = cerr
		}
	}
	z.release()
	return err
}

// Abandon returns the writer to its pool without sending anything more:
// for a handler that panicked, whose response the caller writes anew. A
// compressed stream already begun stays unfinished, which a client sees
// as a truncated body.
func (z *Writer) Abandon() { z.release() }

func (z *Writer) release() {
	if z.zw != nil {
		z.zw.Reset(io.Discard)
		compressors.Put(z.zw)
		z.zw = nil
	}
	z.w = nil
	z.buf = z.buf[:0]
	writers.Put(z)
}
