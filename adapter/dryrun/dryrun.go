// Package dryrun runs an adapter with no cluster, no API server and no
// network: the event, the API's answers and the objects discovery returns
// all come from files (the formats of the authoring guide's section 10),
// and the result is a phase-by-phase trace as text or JSON.
package dryrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/adapter/apiclient"
	"github.com/hyperfleet/hyperfleet/adapter/executor"
	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
	"github.com/hyperfleet/hyperfleet/adapter/transport"
	"github.com/hyperfleet/hyperfleet/adapter/transport/memory"
	"github.com/hyperfleet/hyperfleet/internal/jsonvalue"
	"github.com/hyperfleet/hyperfleet/phase"
	"github.com/hyperfleet/hyperfleet/resource"
)

// Inputs are the three mock files; only the event is required.
type Inputs struct {
	EventFile        string
	APIResponsesFile string
	DiscoveryFile    string
	// Now fixes the clock (reproducible traces); time.Now when zero.
	Now time.Time
	// Env answers env.* params (nil: the process environment).
	Env map[string]string
}

// MockFile is --dry-run-api-responses.
type MockFile struct {
	Responses []MockRoute `json:"responses"`
}

// MockRoute answers calls whose method and URL match, in sequence (the last
// response repeats).
type MockRoute struct {
	Match struct {
		Method     string `json:"method"`
		URLPattern string `json:"urlPattern"`
	} `json:"match"`
	Responses []MockResponse `json:"responses"`
	re        *regexp.Regexp
	next      int
}

// MockResponse is one canned answer.
type MockResponse struct {
	StatusCode int               `json:"statusCode"`
	Headers    map[string]string `json:"headers"`
	Body       json.RawMessage   `json:"body"`
}

// Report is a finished dry run.
type Report struct {
	Adapter  string          `json:"adapter"`
	Event    map[string]any  `json:"event"`
	Type     string          `json:"event_type,omitempty"`
	State    *executor.State `json:"-"`
	PostErr  string          `json:"post_error,omitempty"`
	Result   string          `json:"result"`
	Unmocked []string        `json:"unmocked_calls,omitempty"`
}

// Run loads the mocks and runs the adapter once.
func Run(ctx context.Context, b *taskconfig.Bundle, in Inputs) (*Report, error) {
	event, eventType, err := loadEvent(in.EventFile)
	if err != nil {
		return nil, err
	}
	routes, err := loadMocks(in.APIResponsesFile)
	if err != nil {
		return nil, err
	}
	overrides, err := loadDiscovery(in.DiscoveryFile)
	if err != nil {
		return nil, err
	}
	mock := &mockTransport{routes: routes}
	api, err := apiclient.New(apiclient.Config{
		AdapterName: b.Adapter.Adapter.Name, BaseURL: dryRunBaseURL(b.Adapter.Clients.HyperFleetAPI.BaseURL),
		Version: b.Adapter.Clients.HyperFleetAPI.Version, RetryAttempts: 1, BackoffBase: time.Millisecond,
		HTTP: &http.Client{Transport: mock},
	})
	if err != nil {
		return nil, err
	}
	now := time.Now
	if !in.Now.IsZero() {
		fixed := in.Now
		now = func() time.Time { return fixed }
	}
	lookupEnv := os.LookupEnv
	if in.Env != nil {
		lookupEnv = func(k string) (string, bool) { v, ok := in.Env[k]; return v, ok }
	}
	cluster := memory.New(overrides)
	eng, err := executor.New(b, executor.Options{
		API: api, Now: now, LookupEnv: lookupEnv, Logger: zerolog.Nop(),
		Transports: map[string]transport.Transport{taskconfig.ClientKubernetes: cluster, taskconfig.ClientMaestro: cluster},
		// Nothing terminates slowly in memory.
		RecreateTimeout: time.Second,
	})
	if err != nil {
		return nil, err
	}
	res, runErr := eng.RunEvent(ctx, event, nil)
	rep := &Report{Adapter: eng.Name(), Event: res.State.EventView, Type: eventType, State: res.State, Unmocked: mock.unmocked}
	if runErr != nil {
		rep.PostErr = runErr.Error()
	}
	rep.Result = outcome(res.State, runErr)
	return rep, nil
}

func outcome(st *executor.State, postErr error) string {
	switch {
	case st.Gone:
		return "GONE"
	case postErr != nil || st.Meta.ExecutionStatus == phase.ExecutionFailed:
		return "FAILED"
	case st.Meta.ResourcesSkipped:
		return "SKIPPED"
	}
	return "SUCCESS"
}

// dryRunBaseURL keeps relative URLs resolvable when the config still has a
// placeholder (CHANGE_ME) base URL.
func dryRunBaseURL(configured string) string {
	if strings.HasPrefix(configured, "http://") || strings.HasPrefix(configured, "https://") {
		return configured
	}
	return "http://hyperfleet-api.dry-run"
}

func loadEvent(path string) (resource.Event, string, error) {
	if path == "" {
		return resource.Event{}, "", fmt.Errorf("--dry-run-event is required: a JSON file with the event ({id, kind, href, generation} or a CloudEvent with them in data)")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return resource.Event{}, "", fmt.Errorf("read --dry-run-event: %w", err)
	}
	v, err := jsonvalue.Decode(raw)
	if err != nil {
		return resource.Event{}, "", fmt.Errorf("--dry-run-event %s is not valid JSON: %w", path, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return resource.Event{}, "", fmt.Errorf("--dry-run-event %s must hold a JSON object", path)
	}
	typ, _ := m["type"].(string)
	ev, err := executor.ParseEvent(m)
	if err != nil {
		return resource.Event{}, "", fmt.Errorf("--dry-run-event %s: %w", path, err)
	}
	if ev.ID == "" {
		return resource.Event{}, "", fmt.Errorf("--dry-run-event %s: the event has no id (put {id, kind, generation} at the top or under data)", path)
	}
	return ev, typ, nil
}

func loadMocks(path string) ([]*MockRoute, error) {
	if path == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read --dry-run-api-responses: %w", err)
	}
	var f MockFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("--dry-run-api-responses %s: %w (expected {\"responses\": [{\"match\": {\"method\", \"urlPattern\"}, \"responses\": [{\"statusCode\", \"body\"}]}]})", path, err)
	}
	routes := make([]*MockRoute, 0, len(f.Responses))
	for i := range f.Responses {
		r := &f.Responses[i]
		re, err := regexp.Compile(r.Match.URLPattern)
		if err != nil {
			return nil, fmt.Errorf("--dry-run-api-responses %s: responses[%d].match.urlPattern: %w", path, i, err)
		}
		if len(r.Responses) == 0 {
			return nil, fmt.Errorf("--dry-run-api-responses %s: responses[%d] has no responses", path, i)
		}
		r.re = re
		routes = append(routes, r)
	}
	return routes, nil
}

func loadDiscovery(path string) (map[string]transport.Object, error) {
	if path == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read --dry-run-discovery: %w", err)
	}
	v, err := jsonvalue.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("--dry-run-discovery %s is not valid JSON: %w", path, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("--dry-run-discovery %s must map rendered object names to objects", path)
	}
	out := map[string]transport.Object{}
	for name, obj := range m {
		o, ok := obj.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("--dry-run-discovery %s: %q must be an object", path, name)
		}
		out[name] = o
	}
	return out, nil
}

// mockTransport answers HTTP calls from the mock file.
type mockTransport struct {
	mu       sync.Mutex
	routes   []*MockRoute
	unmocked []string
}

// StatusNoMock answers a call no mock matches: a 4xx so it is not retried.
const StatusNoMock = http.StatusMisdirectedRequest

func (m *mockTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	path := req.URL.Path
	if req.URL.RawQuery != "" {
		path += "?" + req.URL.RawQuery
	}
	for _, r := range m.routes {
		if r.Match.Method != "" && !strings.EqualFold(r.Match.Method, req.Method) {
			continue
		}
		if !r.re.MatchString(path) {
			continue
		}
		resp := r.Responses[min(r.next, len(r.Responses)-1)]
		r.next++
		code := resp.StatusCode
		if code == 0 {
			code = http.StatusOK
		}
		h := http.Header{"Content-Type": []string{"application/json"}}
		for k, v := range resp.Headers {
			h.Set(k, v)
		}
		return &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(bytes.NewReader(resp.Body)), Request: req}, nil
	}
	m.unmocked = append(m.unmocked, req.Method+" "+path)
	body := fmt.Sprintf(`{"error":"no mock in --dry-run-api-responses matches %s %s"}`, req.Method, path)
	return &http.Response{StatusCode: StatusNoMock, Header: http.Header{"Content-Type": []string{"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}
