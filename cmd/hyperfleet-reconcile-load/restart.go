package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/assembly"
	"github.com/hyperfleet/hyperfleet/internal/embeddedtemporal"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// restart measures an API start over a fleet whose workflows all run:
// time to ready, what the start-up pass sends, and the same after a
// registration change (every workflow must hear of it, rate-limited).
// Workers are left out: the workflows only need to exist.
func (b *bench) restart(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "hyperfleet-restart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	srv, err := embeddedtemporal.Start(embeddedtemporal.Config{DatabaseFile: filepath.Join(dir, "temporal.db"), SearchAttributes: reconcile.SearchAttributes()})
	if err != nil {
		return err
	}
	defer srv.Stop()
	tc, err := srv.Dial(client.Options{Logger: quiet{}})
	if err != nil {
		return err
	}
	defer tc.Close()
	start := func(adapters []string, log io.Writer) (*assembly.System, error) {
		return assembly.Start(ctx, assembly.Config{
			API: apiserver.Options{
				Server:     apiserver.Config{Listen: "127.0.0.1:0"},
				Store:      store.Config{Driver: store.BackendSQLite, URL: filepath.Join(dir, "hyperfleet.db")},
				Registered: map[string][]string{resource.KindCluster: adapters, resource.KindNodePool: {}},
				Logger:     zerolog.Nop(),
			},
			Temporal: tc, NoWorkers: true, Logger: zerolog.New(log),
		})
	}

	// The fleet: n clusters, each with its running workflow.
	ids, err := b.seedFleet(ctx, tc, start)
	if err != nil {
		return err
	}

	fmt.Printf("| start | live resources | ready after | start-up pass done after | workflows started | signals to running workflows (sampled) |\n|---|---:|---:|---:|---:|---:|\n")
	for _, run := range []struct {
		name     string
		adapters []string
	}{
		{"same adapters and options", b.w.adapters},
		{"an adapter added", append(append([]string{}, b.w.adapters...), "added-adapter")},
	} {
		log := newLogWatch()
		since := time.Now()
		s, err := start(run.adapters, log)
		if err != nil {
			return err
		}
		ready := waitReady(ctx, s.URL)
		// A registration change signals every workflow at the relay's
		// default 200 a second; allow twice that.
		line := log.wait("every live resource's workflow knows", "registration and options unchanged",
			2*time.Minute+time.Duration(len(ids))*10*time.Millisecond)
		done := time.Since(since)
		started := "0"
		if v, ok := line["started"]; ok {
			started = fmt.Sprint(v)
		} else if _, ok := line["message"]; !ok {
			started = "no start-up pass logged"
		}
		signals, sampled, err := sampleSignals(ctx, tc, ids, since, 200)
		if err != nil {
			_ = s.Stop()
			return err
		}
		fmt.Printf("| %s | %d | %s | %s | %s | %d of %d |\n", run.name, len(ids), ready.Round(time.Millisecond), done.Round(time.Millisecond), started, signals, sampled)
		if err := s.Stop(); err != nil {
			return err
		}
	}
	return nil
}

// seedFleet creates the clusters through a first API with the
// workload's adapters, waits until each has its running workflow, and
// stops that API; start starts an API.
func (b *bench) seedFleet(ctx context.Context, tc client.Client, start func(adapters []string, log io.Writer) (*assembly.System, error)) ([]string, error) {
	first, err := start(b.w.adapters, io.Discard)
	if err != nil {
		return nil, err
	}
	api := &apiClient{base: first.URL + resource.BasePath, http: &http.Client{Timeout: 30 * time.Second}}
	t := time.Now()
	ids, err := api.createClusters(ctx, b.o.clusters, b.o.concurrency)
	if err != nil {
		_ = first.Stop()
		return nil, err
	}
	if err := waitRunning(ctx, tc, len(ids), b.o.timeout); err != nil {
		_ = first.Stop()
		return nil, err
	}
	fmt.Printf("%d clusters and their workflows in %s\n\n", len(ids), time.Since(t).Round(time.Second))
	time.Sleep(2 * time.Second) // the first start-up pass stores its fingerprint
	if err := first.Stop(); err != nil {
		return nil, err
	}
	return ids, nil
}

func waitRunning(ctx context.Context, tc client.Client, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Query: "WorkflowType = '" + reconcile.WorkflowName + "' AND ExecutionStatus = 'Running'"})
		if err == nil && resp.GetCount() >= int64(n) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d workflows running after %s (%v)", resp.GetCount(), n, timeout, err)
		}
		time.Sleep(time.Second)
	}
}

func waitReady(ctx context.Context, base string) time.Duration {
	start := time.Now()
	for ctx.Err() == nil {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return -1
}

// sampleSignals counts the signals a random sample of workflows received
// since t.
func sampleSignals(ctx context.Context, tc client.Client, ids []string, t time.Time, n int) (signals, sampled int, err error) {
	for _, i := range rand.Perm(len(ids))[:min(n, len(ids))] {
		it := tc.GetWorkflowHistory(ctx, reconcile.WorkflowID(resource.KindCluster, ids[i]), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return 0, 0, err
			}
			if ev.GetWorkflowExecutionSignaledEventAttributes() != nil && ev.GetEventTime().AsTime().After(t) {
				signals++
			}
		}
		sampled++
	}
	return signals, sampled, nil
}

// logWatch is an io.Writer for a JSON logger that lets a caller wait for a
// message.
type logWatch struct {
	mu    sync.Mutex
	lines []map[string]any
	w     *io.PipeWriter
}

func newLogWatch() *logWatch {
	r, w := io.Pipe()
	l := &logWatch{w: w}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				l.mu.Lock()
				l.lines = append(l.lines, m)
				l.mu.Unlock()
			}
		}
	}()
	return l
}

func (l *logWatch) Write(p []byte) (int, error) { return l.w.Write(p) }

// wait returns the first line whose message starts with one of prefixes.
func (l *logWatch) wait(prefixA, prefixB string, timeout time.Duration) map[string]any {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		for _, m := range l.lines {
			msg, _ := m["message"].(string)
			if strings.HasPrefix(msg, prefixA) || strings.HasPrefix(msg, prefixB) {
				l.mu.Unlock()
				return m
			}
		}
		l.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	return map[string]any{}
}
