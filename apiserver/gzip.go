package apiserver

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/hyperfleet/hyperfleet/apiserver/compression"
)

// compressResponses gzips a response of at least compression.MinSize bytes
// for a client that accepts gzip (docs/contract.md, "Compression"). HEAD
// and watch requests pass untouched: one has no body, the other streams.
func (s *Server) compressResponses(c *gin.Context) {
	r := c.Request
	if r.Method == http.MethodHead || !compression.AcceptsGzip(strings.Join(r.Header.Values("Accept-Encoding"), ",")) ||
		strings.Contains(r.URL.RawQuery, "watch") && r.URL.Query().Has("watch") {
		c.Next()
		return
	}
	original := c.Writer
	w := &gzipResponse{ResponseWriter: original, z: compression.NewWriter(original)}
	c.Writer = w
	finished := false
	defer func() {
		c.Writer = original
		if !finished {
			// A panic: recoverPanic answers on the original writer.
			w.z.Abandon()
		}
	}()
	c.Next()
	finished = true
	if err := w.z.Close(); err != nil {
		// The client went away mid-body; nothing left to tell it.
		s.requestLog(c).Debug().Err(err).Msg("compressed response cut short")
	}
}

// gzipResponse is gin's view of a compression.Writer.
type gzipResponse struct {
	gin.ResponseWriter
	z *compression.Writer
}

func (w *gzipResponse) WriteHeader(code int)              { w.z.WriteHeader(code) }
func (w *gzipResponse) Write(p []byte) (int, error)       { return w.z.Write(p) }
func (w *gzipResponse) WriteString(s string) (int, error) { return w.z.WriteString(s) }
func (w *gzipResponse) Written() bool                     { return w.z.Pending() || w.ResponseWriter.Written() }

func (w *gzipResponse) Status() int {
	if s := w.z.Status(); s != 0 {
		return s
	}
	return w.ResponseWriter.Status()
}

// WriteHeaderNow sends the headers without a body (a 204): nothing is
// compressed.
func (w *gzipResponse) WriteHeaderNow() {
	_ = w.z.Flush()
	w.ResponseWriter.WriteHeaderNow()
}

// Flush makes the response a stream: see compression.Writer.Flush.
func (w *gzipResponse) Flush() {
	_ = w.z.Flush()
	w.ResponseWriter.Flush()
}
