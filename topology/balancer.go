package topology

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"syscall"
	"time"
)

// Balancer spreads requests over the API replicas the way a Kubernetes
// Service does for the workers' calls: round robin, and a request that
// could not reach one replica goes to the next. A request whose replica
// failed after receiving it is retried on another only when it is
// idempotent (GET, HEAD, PUT, DELETE): the adapters' reads and status
// PUTs, never a create.
type Balancer struct {
	backends []*url.URL
	next     atomic.Uint64
	proxy    *httputil.ReverseProxy
}

// NewBalancer balances over the given base URLs.
func NewBalancer(backends []string) (*Balancer, error) {
	if len(backends) == 0 {
		return nil, errors.New("no API replica to balance over")
	}
	b := &Balancer{}
	for _, s := range backends {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("API replica %q: not a base URL", s)
		}
		b.backends = append(b.backends, u)
	}
	b.proxy = &httputil.ReverseProxy{
		Rewrite:   func(*httputil.ProxyRequest) {}, // the transport picks the replica
		Transport: b,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, `{"type":"about:blank","title":"Service Unavailable","status":503,"code":"HYPERFLEET-SVC-001","detail":%q}`,
				"no API replica answered: "+err.Error())
		},
	}
	return b, nil
}

// ServeHTTP proxies one request.
func (b *Balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) { b.proxy.ServeHTTP(w, r) }

var upstream = &http.Transport{
	Proxy:               nil,
	DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
	MaxIdleConnsPerHost: 256,
	IdleConnTimeout:     90 * time.Second,
}

// RoundTrip sends the request to the replicas in turn until one answers.
func (b *Balancer) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, fmt.Errorf("read request body: %w", err)
		}
		r.Body.Close()
	}
	start := b.next.Add(1)
	var last error
	for i := range b.backends {
		be := b.backends[(start+uint64(i))%uint64(len(b.backends))]
		out := r.Clone(r.Context())
		out.URL.Scheme, out.URL.Host, out.Host = be.Scheme, be.Host, be.Host
		out.RequestURI = ""
		if body != nil {
			out.Body = io.NopCloser(bytes.NewReader(body))
			out.ContentLength = int64(len(body))
		}
		resp, err := upstream.RoundTrip(out)
		if err == nil {
			return resp, nil
		}
		last = err
		if r.Context().Err() != nil || (!refused(err) && !idempotent(r.Method)) {
			break
		}
	}
	return nil, last
}

// refused reports whether the request never reached a replica.
func refused(err error) bool {
	var op *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &op) && op.Op == "dial")
}

func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodOptions:
		return true
	}
	return false
}
