// Package apiclient makes the adapter's HTTP calls to the HyperFleet API:
// relative URLs resolved against the configured base URL and API version,
// per-call timeouts, retries with exponential, linear or constant backoff on
// network errors, 429 and 5xx, an optional bearer token read from a file,
// and a metric per call labelled with the URL's template, never its ids.
package apiclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/hyperfleet/hyperfleet/adapter/metrics"
	"github.com/hyperfleet/hyperfleet/internal/tracing"
)

// Config of a client.
type Config struct {
	AdapterName string
	// BaseURL is where the API listens (http://hyperfleet-api:8000).
	BaseURL string
	// Version of the API path for relative URLs (default v1).
	Version       string
	Timeout       time.Duration
	RetryAttempts int
	RetryBackoff  string
	// BackoffBase is the first retry delay (default 200ms).
	BackoffBase time.Duration
	// TokenPath, when set, is read for an "Authorization: Bearer" token,
	// at most every TokenCacheTTL (0 reads it on every call).
	TokenPath     string
	TokenCacheTTL time.Duration
	// Headers are sent with every call to the API's origin (never
	// elsewhere), before a call's own: the header that marks a system
	// caller in gateway-style tenancy, carrying the system secret
	// (X-HyperFleet-System: <secret>).
	Headers [][2]string
	// HTTP is the client to use (dry-run swaps its transport for mocks).
	HTTP    *http.Client
	Metrics *metrics.Metrics
}

// Client calls the API.
type Client struct {
	cfg  Config
	base *url.URL

	tokenMu   sync.Mutex
	token     string
	tokenRead time.Time
}

// New validates the configuration.
func New(cfg Config) (*Client, error) {
	if cfg.Version == "" {
		cfg.Version = "v1"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.RetryAttempts <= 0 {
		cfg.RetryAttempts = 1
	}
	if cfg.BackoffBase <= 0 {
		cfg.BackoffBase = 200 * time.Millisecond
	}
	if cfg.HTTP == nil {
		// A call made within a traced adapter phase gets a client span and
		// sends its traceparent, so the API's span of a status report is
		// part of the reconcile's trace.
		cfg.HTTP = &http.Client{Transport: tracing.Transport(nil), CheckRedirect: sameOriginRedirects}
	}
	c := &Client{cfg: cfg}
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("hyperfleet_api.base_url %q is not an absolute URL (e.g. http://hyperfleet-api:8000)", cfg.BaseURL)
		}
		c.base = u
	}
	return c, nil
}

// sameOrigin reports whether u is on the configured API's origin (scheme,
// host and port); false when no base URL is configured.
func (c *Client) sameOrigin(u *url.URL) bool {
	return c.base != nil && strings.EqualFold(u.Scheme, c.base.Scheme) && strings.EqualFold(u.Host, c.base.Host)
}

// sameOriginRedirects follows a redirect only within the origin it
// started on: the client would otherwise carry the request's headers (a
// system header among them) to wherever a response points.
func sameOriginRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	first := via[0].URL
	if !strings.EqualFold(req.URL.Scheme, first.Scheme) || !strings.EqualFold(req.URL.Host, first.Host) {
		return http.ErrUseLastResponse
	}
	return nil
}

// Request is one call.
type Request struct {
	Method string
	// URL as rendered: absolute, /api/... (used as is under the base URL),
	// or relative to /api/hyperfleet/<version>.
	URL string
	// Endpoint is the URL's template, the metric label (see EndpointLabel).
	Endpoint      string
	Headers       [][2]string
	Body          []byte
	Timeout       time.Duration
	RetryAttempts int
	RetryBackoff  string
}

// Response is what came back, whatever the status code.
type Response struct {
	Method     string
	URL        string
	StatusCode int
	Body       []byte
	Attempts   int
	Duration   time.Duration
}

// OK reports a 2xx status.
func (r *Response) OK() bool { return r.StatusCode >= 200 && r.StatusCode < 300 }

// Resolve turns a rendered URL into an absolute one.
func (c *Client) Resolve(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if strings.HasPrefix(raw, "http://") || strings.HasPrefix(raw, "https://") {
		return raw, nil
	}
	if c.base == nil {
		return "", fmt.Errorf("cannot call %s: clients.hyperfleet_api.base_url is not set", raw)
	}
	path := raw
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	if !strings.HasPrefix(path, "/api/") {
		path = "/api/hyperfleet/" + c.cfg.Version + path
	}
	u := *c.base
	rel, err := url.Parse(path)
	if err != nil {
		return "", fmt.Errorf("invalid URL %q: %w", raw, err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + rel.Path
	u.RawQuery = rel.RawQuery
	return u.String(), nil
}

// Do performs the call with retries. It returns an error only when no
// response was obtained; HTTP error statuses come back as a Response.
func (c *Client) Do(ctx context.Context, req Request) (*Response, error) {
	method := strings.ToUpper(req.Method)
	if method == "" {
		method = http.MethodGet
	}
	target, err := c.Resolve(req.URL)
	if err != nil {
		return nil, err
	}
	attempts := req.RetryAttempts
	if attempts <= 0 {
		attempts = c.cfg.RetryAttempts
	}
	backoff := req.RetryBackoff
	if backoff == "" {
		backoff = c.cfg.RetryBackoff
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = c.cfg.Timeout
	}
	endpoint := req.Endpoint
	if endpoint == "" {
		endpoint = EndpointLabel(req.URL)
	}
	start := time.Now()
	var lastErr error
	for attempt := 1; attempt <= attempts; attempt++ {
		if attempt > 1 {
			if err := sleep(ctx, c.delay(backoff, attempt-1)); err != nil {
				break
			}
		}
		resp, err := c.once(ctx, method, target, endpoint, req, timeout)
		if err == nil && !retryable(resp.StatusCode) {
			resp.Attempts, resp.Duration = attempt, time.Since(start)
			return resp, nil
		}
		if err == nil {
			if attempt == attempts {
				resp.Attempts, resp.Duration = attempt, time.Since(start)
				return resp, nil
			}
			lastErr = fmt.Errorf("HTTP %d", resp.StatusCode)
			continue
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s %s: %w", method, target, ctx.Err())
	}
	return nil, fmt.Errorf("%s %s failed after %d attempt(s): %w", method, target, attempts, lastErr)
}

func (c *Client) once(ctx context.Context, method, target, endpoint string, req Request, timeout time.Duration) (*Response, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	hr, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, err
	}
	if req.Body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	hr.Header.Set("Accept", "application/json")
	// HyperFleet credentials (the bearer token, the system header) go to
	// the configured API origin only: a URL a task config renders, or a
	// workflow's input names, may point anywhere.
	api := c.sameOrigin(hr.URL)
	if api {
		for _, h := range c.cfg.Headers {
			hr.Header.Set(h[0], h[1])
		}
	}
	for _, h := range req.Headers {
		hr.Header.Set(h[0], h[1])
	}
	if api {
		if tok, err := c.bearer(); err != nil {
			return nil, err
		} else if tok != "" {
			hr.Header.Set("Authorization", "Bearer "+tok)
		}
	}
	t0 := time.Now()
	resp, err := c.cfg.HTTP.Do(hr)
	if err != nil {
		c.cfg.Metrics.APIRequest(c.cfg.AdapterName, "hyperfleet", method, endpoint, 0, time.Since(t0))
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	c.cfg.Metrics.APIRequest(c.cfg.AdapterName, "hyperfleet", method, endpoint, resp.StatusCode, time.Since(t0))
	if err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	return &Response{Method: method, URL: target, StatusCode: resp.StatusCode, Body: raw}, nil
}

func retryable(code int) bool {
	return code == http.StatusTooManyRequests || code >= 500
}

// delay is the wait before retry n (1-based), capped at 10s.
func (c *Client) delay(backoff string, n int) time.Duration {
	base := c.cfg.BackoffBase
	var d time.Duration
	switch backoff {
	case "linear":
		d = base * time.Duration(n)
	case "constant":
		d = base
	default: // exponential
		d = base << (n - 1)
	}
	if d > 10*time.Second || d <= 0 {
		d = 10 * time.Second
	}
	return d
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (c *Client) bearer() (string, error) {
	if c.cfg.TokenPath == "" {
		return "", nil
	}
	c.tokenMu.Lock()
	defer c.tokenMu.Unlock()
	if c.token != "" && c.cfg.TokenCacheTTL > 0 && time.Since(c.tokenRead) < c.cfg.TokenCacheTTL {
		return c.token, nil
	}
	raw, err := os.ReadFile(c.cfg.TokenPath)
	if err != nil {
		return "", fmt.Errorf("read API token from %s: %w", c.cfg.TokenPath, err)
	}
	c.token, c.tokenRead = strings.TrimSpace(string(raw)), time.Now()
	if c.token == "" {
		return "", errors.New("the API token file " + c.cfg.TokenPath + " is empty")
	}
	return c.token, nil
}

var actionRE = regexp.MustCompile(`\{\{[^}]*?\.?([A-Za-z_][A-Za-z0-9_]*)\s*(\|[^}]*)?\}\}`)

// EndpointLabel turns a URL template into a bounded metric label:
// "/api/hyperfleet/v1/clusters/{{ .clusterId }}/statuses" becomes
// "/clusters/{clusterId}/statuses".
func EndpointLabel(tpl string) string {
	out := actionRE.ReplaceAllString(tpl, "{$1}")
	if u, err := url.Parse(out); err == nil && u.Host != "" {
		out = u.Path
	}
	if i := strings.Index(out, "/api/hyperfleet/"); i >= 0 {
		rest := out[i+len("/api/hyperfleet/"):]
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			out = rest[j:]
		}
	}
	if q := strings.IndexByte(out, '?'); q >= 0 {
		out = out[:q]
	}
	return out
}
