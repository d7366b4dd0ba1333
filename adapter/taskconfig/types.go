// Package taskconfig holds the schema of an adapter's two YAML files, the
// AdapterConfig (who the adapter is, how it reaches the API and clusters)
// and the AdapterTaskConfig (params, preconditions, resources, post), their
// strict loading, and their validation: structural rules and the semantic
// checks (CEL compiles, template variables exist, refs resolve). Every
// problem names the file, the path of the field and the fix, and all of
// them are reported at once.
package taskconfig

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// AdapterConfig is adapter-config.yaml.
type AdapterConfig struct {
	Adapter AdapterInfo `yaml:"adapter"`
	// DebugConfig and Log exist for upstream's deployment; accepted.
	DebugConfig bool       `yaml:"debug_config"`
	Log         *LogConfig `yaml:"log"`
	Clients     Clients    `yaml:"clients"`
	// Broker is upstream's message broker; Temporal replaces it.
	Broker map[string]any `yaml:"broker"`
}

// AdapterInfo names the adapter.
type AdapterInfo struct {
	Name    string `yaml:"name"`
	Version string `yaml:"version"`
}

// LogConfig is accepted for compatibility; logging is configured by flags.
type LogConfig struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"`
	Output string `yaml:"output"`
}

// Clients configure how the adapter reaches the outside world.
type Clients struct {
	HyperFleetAPI APIClient         `yaml:"hyperfleet_api"`
	Kubernetes    *KubernetesClient `yaml:"kubernetes"`
	Maestro       *MaestroClient    `yaml:"maestro"`
	// Broker is upstream's subscription; accepted and ignored.
	Broker map[string]any `yaml:"broker"`
}

// APIClient configures calls to the HyperFleet API.
type APIClient struct {
	BaseURL       string    `yaml:"base_url"`
	Version       string    `yaml:"version"`
	Timeout       Duration  `yaml:"timeout"`
	RetryAttempts int       `yaml:"retry_attempts"`
	RetryBackoff  string    `yaml:"retry_backoff"`
	Auth          *APIAuth  `yaml:"auth"`
	Headers       []Header  `yaml:"headers"`
	TLS           *TLSFiles `yaml:"tls"`
}

// APIAuth reads a bearer token from a file (a projected ServiceAccount token).
type APIAuth struct {
	TokenPath     string   `yaml:"token_path"`
	TokenCacheTTL Duration `yaml:"token_cache_ttl"`
}

// TLSFiles point at PEM files.
type TLSFiles struct {
	CAFile             string `yaml:"ca_file"`
	CertFile           string `yaml:"cert_file"`
	KeyFile            string `yaml:"key_file"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// KubernetesClient configures the Kubernetes transport.
type KubernetesClient struct {
	APIVersion     string  `yaml:"api_version"`
	KubeConfigPath string  `yaml:"kube_config_path"`
	QPS            float32 `yaml:"qps"`
	Burst          int     `yaml:"burst"`
}

// MaestroClient configures the Maestro transport: the gRPC source client
// publishes ManifestWorks, the HTTP API reads them back. Every field can
// also come from a HYPERFLEET_MAESTRO_* variable or a --maestro-* flag of
// the worker (they win over the file).
type MaestroClient struct {
	GRPCServerAddress string `yaml:"grpc_server_address"`
	HTTPServerAddress string `yaml:"http_server_address"`
	// SourceID names this adapter's ManifestWorks in Maestro; it defaults
	// to the adapter name and must differ between adapters.
	SourceID string `yaml:"source_id"`
	// ClientID is accepted for upstream's files; the source client
	// identifies itself by SourceID.
	ClientID string `yaml:"client_id"`
	// Insecure allows plaintext gRPC and http:// (local use only).
	Insecure                 bool              `yaml:"insecure"`
	Timeout                  Duration          `yaml:"timeout"`
	ServerHealthinessTimeout Duration          `yaml:"server_healthiness_timeout"`
	RetryAttempts            int               `yaml:"retry_attempts"`
	Auth                     *MaestroAuth      `yaml:"auth"`
	Keepalive                *MaestroKeepalive `yaml:"keepalive"`
}

// MaestroAuth secures the connections to Maestro.
type MaestroAuth struct {
	// Type is "tls" (certificates), "token" (a bearer token over TLS) or
	// "none"; accepted for upstream's files, the fields set decide.
	Type      string      `yaml:"type"`
	TLSConfig *MaestroTLS `yaml:"tls_config"`
	// TokenFile holds a bearer token sent on every gRPC call (needs a CA).
	TokenFile string `yaml:"token_file"`
}

// MaestroTLS points at PEM files.
type MaestroTLS struct {
	CAFile     string `yaml:"ca_file"`
	CertFile   string `yaml:"cert_file"`
	KeyFile    string `yaml:"key_file"`
	ServerName string `yaml:"server_name"`
	// HTTPCAFile verifies the HTTP API when it uses another CA than gRPC.
	HTTPCAFile string `yaml:"http_ca_file"`
}

// MaestroKeepalive pings an idle gRPC connection.
type MaestroKeepalive struct {
	Time    Duration `yaml:"time"`
	Timeout Duration `yaml:"timeout"`
}

// TaskConfig is adapter-task-config.yaml: the four phases.
type TaskConfig struct {
	Params        []Param        `yaml:"params"`
	Preconditions []Precondition `yaml:"preconditions"`
	Resources     []Resource     `yaml:"resources"`
	Post          *Post          `yaml:"post"`
}

// Param types.
const (
	TypeString  = "string"
	TypeInt     = "int"
	TypeInt64   = "int64"
	TypeFloat   = "float"
	TypeFloat64 = "float64"
	TypeBool    = "bool"
)

// Param is a variable of the run.
type Param struct {
	Name        string      `yaml:"name"`
	Source      ParamSource `yaml:"source"`
	Type        string      `yaml:"type"`
	Required    bool        `yaml:"required"`
	Default     any         `yaml:"default"`
	Description string      `yaml:"description"`
}

// ParamSource is where a param's value comes from: a path (event.id,
// env.NAME, secret.ns.name.key, configmap.ns.name.key, or
// <earlier param>.<path>), or one of api_call, expression, file.
type ParamSource struct {
	Path       string      `yaml:"-"`
	APICall    *APICall    `yaml:"api_call"`
	Expression string      `yaml:"expression"`
	File       *FileSource `yaml:"file"`
}

// UnmarshalYAML accepts the scalar and the mapping forms.
func (s *ParamSource) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		s.Path = strings.TrimSpace(n.Value)
		return nil
	}
	type plain ParamSource
	return n.Decode((*plain)(s))
}

// FileSource reads a value from a file at run time (a rotating token).
type FileSource struct {
	Path string `yaml:"path"`
	Trim *bool  `yaml:"trim"`
}

// APICall is an HTTP call to the HyperFleet API.
type APICall struct {
	Method        string   `yaml:"method"`
	URL           string   `yaml:"url"`
	Timeout       Duration `yaml:"timeout"`
	RetryAttempts *int     `yaml:"retry_attempts"`
	RetryBackoff  string   `yaml:"retry_backoff"`
	Headers       []Header `yaml:"headers"`
	Body          string   `yaml:"body"`
}

// Header is one request header; the value is a template.
type Header struct {
	Name  string `yaml:"name"`
	Value string `yaml:"value"`
}

// Precondition decides whether resources are applied.
type Precondition struct {
	Name       string      `yaml:"name"`
	APICall    *APICall    `yaml:"api_call"`
	Capture    []Capture   `yaml:"capture"`
	Conditions []Condition `yaml:"conditions"`
	Expression string      `yaml:"expression"`
}

// Capture extracts a variable from a precondition's response, by field path
// or CEL expression.
type Capture struct {
	Name       string `yaml:"name"`
	Field      string `yaml:"field"`
	Expression string `yaml:"expression"`
	Default    any    `yaml:"default"`
}

// Condition is one structured check.
type Condition struct {
	Field    string   `yaml:"field"`
	Operator Operator `yaml:"operator"`
	Value    any      `yaml:"value"`
}

// Operator is how a structured condition compares its field with its value,
// spelled as task configs write it.
type Operator string

// The condition operators.
const (
	OpEquals             Operator = "equals"
	OpNotEquals          Operator = "notEquals"
	OpIn                 Operator = "in"
	OpNotIn              Operator = "notIn"
	OpContains           Operator = "contains"
	OpGreaterThan        Operator = "greaterThan"
	OpLessThan           Operator = "lessThan"
	OpExists             Operator = "exists"
	OpNotExists          Operator = "notExists"
	OpGreaterThanOrEqual Operator = "greaterThanOrEqual"
	OpLessThanOrEqual    Operator = "lessThanOrEqual"
)

// Operators lists every operator, in the guide's order.
var Operators = []Operator{OpEquals, OpNotEquals, OpIn, OpNotIn, OpContains, OpGreaterThan, OpLessThan,
	OpExists, OpNotExists, OpGreaterThanOrEqual, OpLessThanOrEqual}

// Known reports whether the operator is one of Operators.
func (o Operator) Known() bool {
	return slices.Contains(Operators, o)
}

// operatorNames is Operators as text, for messages.
func operatorNames() []string {
	names := make([]string, len(Operators))
	for i, o := range Operators {
		names[i] = string(o)
	}
	return names
}

// Transport clients.
const (
	ClientKubernetes = "kubernetes"
	ClientMaestro    = "maestro"
)

// Resource is one object the adapter manages.
type Resource struct {
	Name              string            `yaml:"name"`
	Transport         Transport         `yaml:"transport"`
	Manifest          Manifest          `yaml:"manifest"`
	Discovery         *Discovery        `yaml:"discovery"`
	NestedDiscoveries []NestedDiscovery `yaml:"nested_discoveries"`
	RecreateOnChange  bool              `yaml:"recreate_on_change"`
	Lifecycle         *Lifecycle        `yaml:"lifecycle"`
}

// Client returns the transport client, kubernetes by default.
func (r *Resource) Client() string {
	if r.Transport.Client == "" {
		return ClientKubernetes
	}
	return r.Transport.Client
}

// Transport selects how a resource is applied.
type Transport struct {
	Client  string            `yaml:"client"`
	Maestro *MaestroTransport `yaml:"maestro"`
}

// MaestroTransport names the consumer (spoke cluster) of a ManifestWork.
type MaestroTransport struct {
	TargetCluster string `yaml:"target_cluster"`
}

// Manifest is an inline object, a block-scalar template, or a file ref.
type Manifest struct {
	// Inline is a YAML mapping whose string values are templates.
	Inline map[string]any
	// Template is a block scalar rendered as a whole, then parsed.
	Template string
	// Ref names a template file.
	Ref string
	// Line is where the manifest starts, for messages.
	Line int
}

// UnmarshalYAML accepts the three forms.
func (m *Manifest) UnmarshalYAML(n *yaml.Node) error {
	m.Line = n.Line
	switch n.Kind {
	case yaml.ScalarNode:
		m.Template = n.Value
		return nil
	case yaml.MappingNode:
		if len(n.Content) == 2 && n.Content[0].Value == "ref" {
			m.Ref = n.Content[1].Value
			return nil
		}
		var inline map[string]any
		if err := n.Decode(&inline); err != nil {
			return err
		}
		m.Inline = NormalizedCopy(inline).(map[string]any)
		return nil
	}
	return fmt.Errorf("line %d: manifest must be a mapping, a block scalar (|) or {ref: file}", n.Line)
}

// IsZero reports an absent manifest.
func (m Manifest) IsZero() bool { return m.Inline == nil && m.Template == "" && m.Ref == "" }

// Discovery reads a resource back after applying it.
type Discovery struct {
	// Namespace to look in; empty or "*" means cluster-scoped or every namespace.
	Namespace   string     `yaml:"namespace"`
	ByName      string     `yaml:"by_name"`
	BySelectors *Selectors `yaml:"by_selectors"`
}

// Selectors select by labels.
type Selectors struct {
	LabelSelector map[string]string `yaml:"label_selector"`
}

// NestedDiscovery finds a sub-resource inside a ManifestWork (Maestro).
type NestedDiscovery struct {
	Name      string    `yaml:"name"`
	Discovery Discovery `yaml:"discovery"`
}

// Lifecycle gates creation and drives deletion.
type Lifecycle struct {
	Create *CreateLifecycle `yaml:"create"`
	Delete *DeleteLifecycle `yaml:"delete"`
}

// CreateLifecycle creates the resource only when its expression holds.
type CreateLifecycle struct {
	When *When `yaml:"when"`
}

// Propagation policies of lifecycle.delete.
const (
	PropagationBackground = "Background"
	PropagationForeground = "Foreground"
	PropagationOrphan     = "Orphan"
)

// DeleteLifecycle deletes the resource when its expression holds.
type DeleteLifecycle struct {
	PropagationPolicy string `yaml:"propagationPolicy"`
	When              *When  `yaml:"when"`
}

// When is a CEL condition.
type When struct {
	Expression string `yaml:"expression"`
}

// Post builds payloads and runs post actions; it always runs.
type Post struct {
	Payloads    []Payload    `yaml:"payloads"`
	PostActions []PostAction `yaml:"post_actions"`
}

// Payload is a JSON document built from templates, CEL and field reads.
type Payload struct {
	Name     string         `yaml:"name"`
	When     *When          `yaml:"when"`
	Build    map[string]any `yaml:"build"`
	BuildRef string         `yaml:"build_ref"`
}

// PostAction is an API call, usually the PUT of the status.
type PostAction struct {
	Name    string   `yaml:"name"`
	When    *When    `yaml:"when"`
	APICall *APICall `yaml:"api_call"`
}

// Duration reads "10s"-style strings (or a number of seconds).
type Duration struct{ time.Duration }

// UnmarshalYAML parses the duration.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v := strings.TrimSpace(n.Value)
	if v == "" {
		return nil
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		d.Duration = time.Duration(secs * float64(time.Second))
		return nil
	}
	parsed, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration; write e.g. 10s, 1m30s", n.Line, v)
	}
	d.Duration = parsed
	return nil
}

// NormalizedCopy turns YAML-decoded values into the JSON-shaped values the
// engine uses: map[string]any, []any, int64, float64, string, bool, nil.
// It returns a copy and never writes to v: the values it is given are often
// the loaded config's, shared by every run of an adapter at once.
func NormalizedCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = NormalizedCopy(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = NormalizedCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = NormalizedCopy(e)
		}
		return out
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case uint64:
		return int64(x)
	case float32:
		return float64(x)
	}
	return v
}
