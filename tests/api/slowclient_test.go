package api

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver"
)

// serve runs the API's own HTTP server (its timeouts are not httptest's)
// and returns its address.
func serve(t *testing.T, e *env) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.app.Server.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// safetyNet bounds a wait that the server must end: if it does not, the
// test fails after this long instead of hanging.
const safetyNet = time.Minute

// send opens a connection and writes raw, then nothing more.
func send(t *testing.T, addr, raw string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(safetyNet)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// awaitClose reads what the server sends until it closes the connection;
// the safety net's timeout is a failure.
func awaitClose(t *testing.T, conn net.Conn) string {
	t.Helper()
	got, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept a slow client's connection open for %v (read %q)", safetyNet, got)
	}
	return string(got)
}

// A client that trickles its headers or its body is disconnected after the
// read timeouts (a body that stops arriving is a 408 problem); a request
// refused before its body is read (no valid token, with JWT on) is
// answered at once, without waiting for a body that never comes.
func TestSlowClients(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		e := newEnv(t, backend, func(o *apiserver.Options) {
			o.Server.ReadHeaderTimeout = 500 * time.Millisecond
			o.Server.ReadTimeout = time.Second
		})
		addr := serve(t, e)

		// Headers that never end: closed without a response.
		conn := send(t, addr, "POST "+base+"/clusters HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\n")
		if got := awaitClose(t, conn); got != "" {
			t.Errorf("trickled headers: the server answered %q", got)
		}

		// A body that stops after 10 of 100 bytes: 408 naming the timeout,
		// then the connection is closed.
		conn = send(t, addr, "POST "+base+"/clusters HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"kind\":\"C")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("trickled body: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		r := &response{t: t, method: "POST", path: base + "/clusters", status: resp.StatusCode, header: resp.Header, body: body}
		if p := r.problem(http.StatusRequestTimeout, "HYPERFLEET-VAL-009"); !strings.Contains(p.Detail, "read timeout") {
			t.Errorf("408 detail %q", p.Detail)
		}
		awaitClose(t, conn)
		// Nothing was created, and the server still serves.
		e.url = "http://" + addr
		e.do("GET", base+"/clusters", nil).expect(200)

		// With JWT on and no valid token, the 401 comes before the body,
		// which never does: under a read timeout far longer than the
		// safety net, only an answer that does not wait for it passes.
		signer := newSigner(t, "slow")
		jwks := filepath.Join(t.TempDir(), "jwks.json")
		if err := os.WriteFile(jwks, signer.jwks(t), 0o600); err != nil {
			t.Fatal(err)
		}
		authed := newEnv(t, backend, func(o *apiserver.Options) {
			o.Server.ReadTimeout = time.Hour
			o.Auth.Enabled = true
			o.Auth.JWKSFile = jwks
		})
		addr = serve(t, authed)
		for _, auth := range []string{"", "Authorization: Bearer not-a-token\r\n"} {
			conn = send(t, addr, "POST "+base+"/clusters HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\n"+auth+"Content-Length: 100000\r\n\r\n{")
			resp, err = http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("%q: no answer before the body: %v", auth, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
				t.Errorf("%q: %d, close %v; want 401 and Connection: close", auth, resp.StatusCode, resp.Close)
			}
		}
	})
}
