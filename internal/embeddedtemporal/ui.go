package embeddedtemporal

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	"github.com/temporalio/ui-server/v2/server/server_options"

	"github.com/hyperfleet/hyperfleet/internal/tlsfiles"
)

// UI is the Temporal Web UI serving one frontend.
type UI struct {
	srv *uiserver.Server
	URL string
}

// StartUI serves the Web UI for the server on 127.0.0.1:port.
func (s *Server) StartUI(port int) (*UI, error) {
	return StartUI(UIConfig{HostPort: s.hostPort, Namespace: s.cfg.Namespace, Port: port})
}

// UIConfig says which frontend the Web UI serves, and how it reaches it.
type UIConfig struct {
	// HostPort is the Temporal frontend; Namespace the one the UI opens on.
	HostPort, Namespace string
	// Port on 127.0.0.1.
	Port int
	// TLS to the frontend, when it requires it: the CA that signed its
	// certificate, and the UI's client certificate for mutual TLS.
	TLS tlsfiles.Files
}

// StartUI serves the Web UI for the Temporal frontend at cfg.HostPort on
// 127.0.0.1:cfg.Port. The UI library exits the process when it cannot
// listen, so the port is checked first and a clear error returned
// instead.
func StartUI(cfg UIConfig) (*UI, error) {
	hostPort, namespace, port := cfg.HostPort, cfg.Namespace, cfg.Port
	if err := portFree(port); err != nil {
		return nil, fmt.Errorf("temporal UI port %d: %w (pick another with --ui-port, or 0 to run without the UI)", port, err)
	}
	srv := uiserver.NewServer(server_options.WithConfigProvider(&uiconfig.Config{
		Host:                "127.0.0.1",
		Port:                port,
		TemporalGRPCAddress: hostPort,
		EnableUI:            true,
		DefaultNamespace:    namespace,
		HideLogs:            true,
		DisableNewsFetch:    true,
		// Plain HTTP on loopback: the CSRF cookie must not require HTTPS.
		CORS: uiconfig.CORS{CookieInsecure: true},
		TLS: uiconfig.TLS{
			CaFile: cfg.TLS.CA, CertFile: cfg.TLS.Cert, KeyFile: cfg.TLS.Key,
			// Without any file set the UI dials in plain text, and this
			// is not read; with TLS the frontend is always verified.
			ServerName: cfg.TLS.ServerName, EnableHostVerification: true,
		},
	}))
	go func() { _ = srv.Start() }()
	ui := &UI{srv: srv, URL: "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	if err := waitHTTP(ui.URL+"/healthz", time.Minute); err != nil {
		srv.Stop()
		return nil, fmt.Errorf("temporal UI: %w", err)
	}
	return ui, nil
}

// Stop closes the UI's listener.
func (u *UI) Stop() { u.srv.Stop() }

func waitHTTP(url string, within time.Duration) error {
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		resp, err := http.Get(url) //nolint:gosec // loopback URL we built
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return nil
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not answering %s after %s: %v", url, within, last)
}
