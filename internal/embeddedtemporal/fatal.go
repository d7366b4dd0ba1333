package embeddedtemporal

import (
	"fmt"
	"io"
	"os"
	"strings"

	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// fatalShown makes the server's fatal errors visible. The Temporal server
// ends the process through its logger's Fatal when it cannot start (a
// port it cannot bind, a membership listener), and its logger writes to a
// file or nowhere: `hyperfleet dev` then exited 1 saying nothing. Each
// Fatal is also written to w, with its tags, and the process exits even
// when the logger underneath would not (the no-op logger returns, and the
// server would go on with what failed).
type fatalShown struct {
	tlog.Logger
	tags []tag.Tag // prepended by With, for the message on w
	w    io.Writer
	exit func(code int)
}

func showFatal(l tlog.Logger) tlog.Logger {
	return &fatalShown{Logger: l, w: os.Stderr, exit: os.Exit}
}

func (l *fatalShown) With(tags ...tag.Tag) tlog.Logger {
	all := append(append([]tag.Tag(nil), l.tags...), tags...)
	return &fatalShown{Logger: tlog.With(l.Logger, tags...), tags: all, w: l.w, exit: l.exit}
}

func (l *fatalShown) Fatal(msg string, tags ...tag.Tag) {
	var b strings.Builder
	b.WriteString("embedded Temporal server: ")
	b.WriteString(msg)
	for _, group := range [][]tag.Tag{l.tags, tags} {
		for _, t := range group {
			fmt.Fprintf(&b, " %s=%v", t.Key(), t.Value())
		}
	}
	fmt.Fprintln(l.w, b.String())
	l.Logger.Fatal(msg, tags...)
	l.exit(1)
}
