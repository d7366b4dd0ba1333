//go:build integration

package api

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// entitiesLikeUpstream is an entities block shaped as upstream HyperFleet's
// chart ships it: Cluster and NodePool with required_adapters and
// require_spec_schema, and Channel, Version and WifConfig with neither.
const entitiesLikeUpstream = `entities:
  - kind: Cluster
    plural: clusters
    spec_schema_name: ClusterSpec
    required_adapters: [validation, dns]
    name_min_len: 3
    name_max_len: 53
    require_spec_schema: true
  - kind: NodePool
    plural: nodepools
    parent_kind: Cluster
    on_parent_delete: cascade
    spec_schema_name: NodePoolSpec
    required_adapters: [validation]
    name_min_len: 3
    name_max_len: 15
    require_spec_schema: true
  - kind: Channel
    plural: channels
    spec_schema_name: ChannelSpec
  - kind: Version
    plural: versions
    parent_kind: Channel
    on_parent_delete: restrict
    spec_schema_name: VersionSpec
  - kind: WifConfig
    plural: wifconfigs
    spec_schema_name: WifConfigSpec
`

const specSchemas = `openapi: 3.0.3
info: {title: specs, version: "1"}
paths: {}
components:
  schemas:
    ClusterSpec: {type: object}
    NodePoolSpec: {type: object}
    ChannelSpec: {type: object, properties: {tier: {type: string}}}
`

// hyperfleet serve --kinds with upstream's entities block and no adapter
// variables at all starts: the kinds without required_adapters have none,
// the log says what that means, and their resources are served and, with
// nothing to finalize, removed at once on DELETE.
func TestServeStartsWithUpstreamEntities(t *testing.T) {
	dir := t.TempDir()
	kinds, schema := filepath.Join(dir, "entities.yaml"), filepath.Join(dir, "schema.yaml")
	if err := os.WriteFile(kinds, []byte(entitiesLikeUpstream), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(schema, []byte(specSchemas), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	p := start(t, []string{"HYPERFLEET_LOG_FORMAT=json"}, "serve", "--state-dir", dir, "--listen", addr, "--kinds", kinds, "--spec-schema", schema)
	waitReady(t, p, addr)
	for _, want := range []string{
		`"kind":"Channel"`, `Channel has no required adapters: its resources are stored and served but never become Ready or Reconciled`,
		`"source":"no required_adapters in ` + kinds + ` and no HYPERFLEET_CHANNEL_ADAPTERS"`,
		`WifConfig has no required adapters`, `Version has no required adapters`,
	} {
		if !strings.Contains(p.output(), want) {
			t.Errorf("start-up log lacks %s:\n%s", want, p.output())
		}
	}
	if strings.Contains(p.output(), "Cluster has no required adapters") {
		t.Errorf("Cluster, which requires adapters, is logged as having none:\n%s", p.output())
	}

	resp, err := http.Post("http://"+addr+base+"/channels", "application/json", strings.NewReader(`{"kind":"Channel","name":"stable","spec":{"tier":"ga"}}`))
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create a channel: %v %v\n%s", resp, err, p.output())
	}
	loc := resp.Header.Get("Location")
	resp.Body.Close()
	// The spec schema named by spec_schema_name applies.
	resp, err = http.Post("http://"+addr+base+"/channels", "application/json", strings.NewReader(`{"kind":"Channel","name":"beta","spec":{"tier":1}}`))
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a channel against ChannelSpec: %v %v", resp, err)
	}
	resp.Body.Close()
	req, _ := http.NewRequest(http.MethodDelete, "http://"+addr+loc, nil)
	if resp, err = http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("delete the channel: %v %v", resp, err)
	}
	resp.Body.Close()
	if resp, err = http.Get("http://" + addr + loc); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("the channel is still there after DELETE: %v %v", resp, err)
	}
	resp.Body.Close()

	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, p.output())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit after SIGTERM:\n%s", p.output())
	}
}

// Upstream's entities block starts unchanged, without --spec-schema: the
// kinds that require a spec schema take the built-in base (open objects,
// as upstream's built-in document has them), so a cluster's spec must be
// an object and nothing more.
func TestServeStartsWithUpstreamEntitiesAndTheBaseSchemas(t *testing.T) {
	dir := t.TempDir()
	kinds := filepath.Join(dir, "entities.yaml")
	if err := os.WriteFile(kinds, []byte(entitiesLikeUpstream), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	p := start(t, []string{"HYPERFLEET_LOG_FORMAT=json"}, "serve", "--state-dir", dir, "--listen", addr, "--kinds", kinds)
	waitReady(t, p, addr)
	if !strings.Contains(p.output(), "with the built-in base schemas") {
		t.Errorf("the start-up log does not say the base schemas apply:\n%s", p.output())
	}
	for _, c := range []struct {
		body string
		want int
	}{
		{`{"kind":"Cluster","name":"open","spec":{"anything":{"goes":[1,2]}}}`, http.StatusCreated},
		{`{"kind":"Cluster","name":"not-an-object","spec":[1,2]}`, http.StatusBadRequest},
	} {
		resp, err := http.Post("http://"+addr+base+"/clusters", "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("POST %s = %d, want %d", c.body, resp.StatusCode, c.want)
		}
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Wait()
}
