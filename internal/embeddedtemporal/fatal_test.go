package embeddedtemporal

import (
	"errors"
	"strings"
	"testing"

	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

func TestFatalIsShownAndEndsTheProcess(t *testing.T) {
	var out strings.Builder
	exited := 0
	var l tlog.Logger = &fatalShown{Logger: tlog.NewNoopLogger(), w: &out, exit: func(code int) { exited = code }}
	// The server derives loggers with tags and calls Fatal on those.
	l = tlog.With(l, tag.Service("frontend"))
	l.Info("not shown")
	l.Fatal("Failed to start gRPC listener", tag.Error(errors.New("bind: address already in use")), tag.Address("127.0.0.1:7233"))

	got := out.String()
	for _, want := range []string{"embedded Temporal server: Failed to start gRPC listener", "service=frontend", "bind: address already in use", "address=127.0.0.1:7233"} {
		if !strings.Contains(got, want) {
			t.Errorf("shown %q, want it to contain %q", got, want)
		}
	}
	if strings.Contains(got, "not shown") {
		t.Errorf("shown %q: only Fatal goes to the terminal", got)
	}
	if exited != 1 {
		t.Errorf("exit code %d, want 1: the no-op logger's Fatal returns, the process must not go on", exited)
	}
}
