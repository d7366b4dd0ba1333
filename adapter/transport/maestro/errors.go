package maestro

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// failure is what went wrong talking to Maestro, as far as the message
// tells: the source client turns every cause into a Kubernetes-style
// status error carrying the server's or the network's text.
type failure int

const (
	failureOther failure = iota
	// failureUnreachable: no answer (server down, wrong address, TLS).
	failureUnreachable
	// failureUnregistered: the consumer (target cluster) is not registered.
	failureUnregistered
	// failureRejected: the server refused the ManifestWork itself.
	failureRejected
)

// classify reads an error's message. Pure: table-tested.
func classify(msg string) failure {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "foreign key") || strings.Contains(m, "consumer") && strings.Contains(m, "not found"):
		return failureUnregistered
	case containsAny(m, "connection refused", "code = unavailable", "no such host", "is not ready",
		"deadline exceeded", "context deadline", "client.timeout", "i/o timeout", "connection reset",
		"transport is closing", "eof", "tls:", "x509:", "server misbehaving", "502 bad gateway", "503 service unavailable"):
		return failureUnreachable
	case containsAny(m, "is invalid", "invalid value", "required value", "failed to decode", "unsupported", "bad request"):
		return failureRejected
	}
	return failureOther
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// refused reports whether Maestro answered and said no (as opposed to not
// answering): such a failure leaves the gRPC stream in place.
func refused(err error) bool {
	switch apierrors.ReasonForError(err) {
	case "Invalid", "AlreadyExists", "NotFound", "Conflict", "MethodNotAllowed", "BadRequest":
		return true
	}
	c := classify(err.Error())
	return c == failureUnregistered || c == failureRejected || strings.Contains(err.Error(), "code = Unknown")
}

// explain turns a failed operation into a message naming the cause and
// the fix; op is "create", "get", ... and what names the ManifestWork.
func (c *Client) explain(op, consumer, what string, err error) error {
	if err == nil {
		return nil
	}
	detail := strings.TrimSpace(err.Error())
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		detail = status.Status().Message
	}
	switch classify(detail) {
	case failureUnregistered:
		return fmt.Errorf("%s %s: consumer %q is not registered in Maestro: register it (POST %s/api/maestro/v1/consumers with {\"name\": %q}) "+
			"or point transport.maestro.target_cluster at a registered consumer (Maestro said: %s)",
			op, what, consumer, strings.TrimSuffix(c.cfg.HTTPAddress, "/"), consumer, detail)
	case failureUnreachable:
		return fmt.Errorf("%s %s on consumer %q: Maestro is unreachable (gRPC %s, HTTP %s): %s: check that the server runs and that "+
			"clients.maestro.grpc_server_address and http_server_address point at it; the next round retries",
			op, what, consumer, c.cfg.GRPCAddress, c.cfg.HTTPAddress, detail)
	case failureRejected:
		return fmt.Errorf("%s %s on consumer %q: Maestro rejected the ManifestWork: %s: fix the manifest", op, what, consumer, detail)
	case failureOther:
		// Maestro's own words are the best explanation.
	}
	return fmt.Errorf("%s %s on consumer %q: %s", op, what, consumer, detail)
}
