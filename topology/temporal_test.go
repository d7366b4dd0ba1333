package topology

import (
	"os"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Both of Temporal's stores go through pgx, which prepares each statement
// once per connection: the lib/pq plugin ("postgres12") has PostgreSQL
// plan every statement again and takes two round trips for it.
func TestTemporalStoresUseTheStatementCachingDriver(t *testing.T) {
	ports := map[string]temporalPorts{}
	for i, svc := range TemporalServices {
		ports[svc] = temporalPorts{GRPC: 7000 + i, Membership: 7100 + i, Metrics: 7200 + i}
	}
	files, err := writeTemporalConfigs(t.TempDir(), temporalConfig{Shards: 512, DBPort: 5433, DBPassword: "pw",
		Database: "temporal", Visibility: "temporal_visibility", Ports: ports, FrontendHTTP: 7300})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(TemporalServices) {
		t.Fatalf("wrote %d service configurations, want %d", len(files), len(TemporalServices))
	}
	for svc, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			Persistence struct {
				Datastores map[string]struct {
					SQL struct {
						PluginName   string `yaml:"pluginName"`
						DatabaseName string `yaml:"databaseName"`
					} `yaml:"sql"`
				} `yaml:"datastores"`
			} `yaml:"persistence"`
		}
		if err := yaml.Unmarshal(raw, &cfg); err != nil {
			t.Fatalf("%s: %v", svc, err)
		}
		stores := cfg.Persistence.Datastores
		if len(stores) != 2 {
			t.Fatalf("%s: %d datastores, want the default store and visibility", svc, len(stores))
		}
		for name, want := range map[string]string{"default": "temporal", "visibility": "temporal_visibility"} {
			got := stores[name].SQL
			if got.PluginName != "postgres12_pgx" || got.DatabaseName != want {
				t.Errorf("%s: datastore %s is plugin %q on %q, want postgres12_pgx on %q", svc, name, got.PluginName, got.DatabaseName, want)
			}
		}
	}
}
