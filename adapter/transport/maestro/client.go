package maestro

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/openshift-online/maestro/pkg/api/openapi"
	"github.com/openshift-online/maestro/pkg/client/cloudevents/grpcsource"
	"github.com/rs/zerolog"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	workv1client "open-cluster-management.io/api/client/work/clientset/versioned/typed/work/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	cloudeventscommon "open-cluster-management.io/sdk-go/pkg/cloudevents/clients/common"
	cloudeventsutils "open-cluster-management.io/sdk-go/pkg/cloudevents/clients/utils"
	"open-cluster-management.io/sdk-go/pkg/cloudevents/generic/options/grpc"

	"github.com/hyperfleet/hyperfleet/internal/tlsfiles"
)

// Client is one adapter process's connection to Maestro, shared by every
// concurrent activity. The gRPC source client keeps the consumer of its
// last ManifestWorks(consumer) call as shared state, so calls are
// serialised: each holds the lock for one REST read and at most one
// publish, both bounded by Config.Timeout.
//
// The gRPC stream is opened on first use, not at start-up, so a worker
// starts while Maestro is down; a publish that fails for want of a
// connection drops the stream and the next call opens a fresh one instead
// of waiting out the source client's own reconnect backoff (up to a minute).
type Client struct {
	cfg  Config
	log  zerolog.Logger
	api  *openapi.APIClient
	grpc *tls.Config // nil: plaintext
	tok  string
	// klog is handed to the cloudevents library through the context: it
	// logs every publish at info level, which here is debug chatter.
	klog logr.Logger

	root context.Context
	stop context.CancelFunc

	mu   sync.Mutex
	conn *connection

	watchState
}

// connection is one gRPC source client and what it started.
type connection struct {
	// ctx ends when the connection is dropped.
	ctx context.Context
	// stream is the status watch opened with the connection (nil when no
	// adapter watches).
	stream watch.Interface
	works  workv1client.WorkV1Interface
	dialer *grpc.GRPCDialer
	cancel context.CancelFunc
}

// New checks the configuration and reads its files; it does not connect.
func New(cfg Config, log zerolog.Logger) (*Client, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, log: log.With().Str("component", "maestro").Str("source_id", cfg.SourceID).Logger(),
		watchState: newWatchState()}
	c.klog = funcr.New(func(prefix, args string) { c.log.Debug().Str("lib", prefix).Msg(args) }, funcr.Options{})
	httpTransport := http.DefaultTransport.(*http.Transport).Clone()
	if strings.HasPrefix(cfg.HTTPAddress, "https://") {
		tc, err := tlsfiles.ClientConfig(tlsfiles.Files{CA: cfg.HTTPCAFile, Cert: cfg.CertFile, Key: cfg.KeyFile, InsecureSkipVerify: cfg.Insecure})
		if err != nil {
			return nil, fmt.Errorf("clients.maestro TLS for %s: %w", cfg.HTTPAddress, err)
		}
		httpTransport.TLSClientConfig = tc
	}
	apiCfg := openapi.NewConfiguration()
	apiCfg.UserAgent = "hyperfleet/" + cfg.SourceID
	apiCfg.Servers = openapi.ServerConfigurations{{URL: strings.TrimSuffix(cfg.HTTPAddress, "/")}}
	apiCfg.HTTPClient = &http.Client{Transport: httpTransport, Timeout: cfg.Timeout}
	c.api = openapi.NewAPIClient(apiCfg)
	if !cfg.Insecure {
		tc, err := tlsfiles.ClientConfig(tlsfiles.Files{CA: cfg.CAFile, Cert: cfg.CertFile, Key: cfg.KeyFile, ServerName: cfg.ServerName})
		if err != nil {
			return nil, fmt.Errorf("clients.maestro TLS for %s: %w", cfg.GRPCAddress, err)
		}
		c.grpc = tc
		if cfg.TokenFile != "" {
			b, err := os.ReadFile(cfg.TokenFile)
			if err != nil {
				return nil, fmt.Errorf("clients.maestro.auth.token_file: %w", err)
			}
			if c.tok = strings.TrimSpace(string(b)); c.tok == "" {
				return nil, fmt.Errorf("clients.maestro.auth.token_file %s is empty", cfg.TokenFile)
			}
		}
	}
	c.root, c.stop = context.WithCancel(context.Background())
	return c, nil
}

// Config is the client's effective configuration.
func (c *Client) Config() Config { return c.cfg }

// Close drops the gRPC stream and stops its goroutines.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked()
	c.stop()
}

// works runs fn on the consumer's ManifestWork interface under the lock.
// publishes says whether fn sends over gRPC: when it fails for a reason
// other than Maestro refusing the request, the stream is dropped so the
// next call reconnects. The timeout bounds the call itself, not the wait
// for the lock: concurrent rounds queue here, and a queued call must not
// fail as "unreachable" because others went first (the caller's context
// still bounds the whole).
func (c *Client) works(ctx context.Context, consumer string, publishes bool, fn func(ctx context.Context, w workv1client.ManifestWorkInterface) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(klog.NewContext(ctx, c.klog), c.cfg.Timeout)
	defer cancel()
	if c.root.Err() != nil {
		return errors.New("the Maestro client is closed")
	}
	if c.conn == nil {
		if err := c.openLocked(); err != nil {
			return err
		}
	}
	err := fn(ctx, c.conn.works.ManifestWorks(consumer))
	if err != nil && publishes && !refused(err) {
		c.log.Warn().Err(err).Str("consumer", consumer).Msg("publish failed: reconnecting on the next call")
		c.dropLocked()
	}
	return err
}

// read gets a ManifestWork from the REST API, nil when there is none. It
// uses none of the source client's state, but it still takes the lock:
// Maestro's server opens a database connection for every concurrent
// request beyond a small idle pool, and under a burst of 50 clusters
// unserialised reads made create to Available slower (p50 15 s against
// 11-14 s here).
func (c *Client) read(ctx context.Context, consumer, name string) (*workv1.ManifestWork, error) {
	id := workID(c.cfg.SourceID, consumer, name)
	work, epoch := c.cached(id)
	if work != nil {
		return work, nil
	}
	work, err := c.readREST(ctx, id)
	if err == nil {
		c.fill(id, epoch, work)
	}
	return work, err
}

// workID is Maestro's id of a source's ManifestWork, the UID it carries.
func workID(source, consumer, name string) types.UID {
	return types.UID(cloudeventsutils.UID(source, cloudeventscommon.ManifestWorkGR.String(), consumer, name))
}

func (c *Client) readREST(ctx context.Context, id types.UID) (*workv1.ManifestWork, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.root.Err() != nil {
		return nil, errors.New("the Maestro client is closed")
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	rb, resp, err := c.api.DefaultAPI.ApiMaestroV1ResourceBundlesIdGet(ctx, string(id)).Execute()
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return grpcsource.ToManifestWork(rb)
}

// openLocked connects and, when the client watches, opens the status
// stream before anything is published on the connection.
func (c *Client) openLocked() error {
	conn, err := c.connect()
	if err != nil {
		return fmt.Errorf("connect to the Maestro gRPC server %s: %w", c.cfg.GRPCAddress, err)
	}
	if c.watching() {
		if err := conn.openStream(c); err != nil {
			conn.cancel()
			_ = conn.dialer.Close()
			return err
		}
	}
	c.conn = conn
	return nil
}

func (c *Client) connect() (*connection, error) {
	ctx, cancel := context.WithCancel(klog.NewContext(c.root, c.klog))
	dialer := &grpc.GRPCDialer{URL: c.cfg.GRPCAddress, TLSConfig: c.grpc, Token: c.tok}
	if c.cfg.KeepaliveTime > 0 {
		dialer.KeepAliveOptions = grpc.KeepAliveOptions{Enable: true, Time: c.cfg.KeepaliveTime, Timeout: c.cfg.KeepaliveTimeout}
	}
	healthiness := c.cfg.ServerHealthinessTimeout
	works, err := grpcsource.NewMaestroGRPCSourceWorkClient(ctx, ocmLogger{c.log}, c.api,
		&grpc.GRPCOptions{Dialer: dialer, ServerHealthinessTimeout: &healthiness}, c.cfg.SourceID)
	if err != nil {
		cancel()
		_ = dialer.Close()
		return nil, err
	}
	c.log.Info().Str("grpc", c.cfg.GRPCAddress).Str("http", c.cfg.HTTPAddress).Msg("connected to Maestro")
	return &connection{ctx: ctx, works: works, dialer: dialer, cancel: cancel}, nil
}

func (c *Client) dropLocked() {
	if c.conn == nil {
		return
	}
	c.conn.cancel()
	_ = c.conn.dialer.Close()
	c.conn = nil
}

// ocmLogger hands the source client's log lines to zerolog. Fatal never
// exits: a library must not end the worker.
type ocmLogger struct{ log zerolog.Logger }

func (l ocmLogger) DebugEnabled() bool { return l.log.GetLevel() <= zerolog.DebugLevel }
func (l ocmLogger) InfoEnabled() bool  { return l.log.GetLevel() <= zerolog.InfoLevel }
func (l ocmLogger) WarnEnabled() bool  { return l.log.GetLevel() <= zerolog.WarnLevel }
func (l ocmLogger) ErrorEnabled() bool { return l.log.GetLevel() <= zerolog.ErrorLevel }
func (l ocmLogger) Debug(_ context.Context, f string, a ...any) {
	l.log.Debug().Msgf(f, a...)
}
func (l ocmLogger) Info(_ context.Context, f string, a ...any) {
	l.log.Debug().Msgf(f, a...) // the source client's info lines are per-request chatter
}
func (l ocmLogger) Warn(_ context.Context, f string, a ...any)  { l.log.Warn().Msgf(f, a...) }
func (l ocmLogger) Error(_ context.Context, f string, a ...any) { l.log.Error().Msgf(f, a...) }
func (l ocmLogger) Fatal(_ context.Context, f string, a ...any) { l.log.Error().Msgf(f, a...) }

// Clients hands out one Client per distinct settings, made on first use,
// so that adapters of one worker with the same clients.maestro settings
// share one gRPC stream. Its clients live as long as the process. Make it
// with NewClients.
type Clients struct {
	mu    sync.Mutex
	byKey map[string]*Client
}

// NewClients returns an empty set of shared clients.
func NewClients() *Clients { return &Clients{byKey: map[string]*Client{}} }

// Get returns the client for these settings, making it on first use.
func (cs *Clients) Get(cfg Config, log zerolog.Logger) (*Client, error) {
	key := cfg.WithDefaults().key()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c, ok := cs.byKey[key]; ok {
		return c, nil
	}
	c, err := New(cfg, log)
	if err != nil {
		return nil, err
	}
	cs.byKey[key] = c
	return c, nil
}
