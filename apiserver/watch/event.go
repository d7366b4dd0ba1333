// Package watch streams the change log (store.ChangeLog) to the API's
// watchers: one tail of the log per replica, fanned out to each watcher
// through a bounded buffer, with the caps that bound how many watch, and
// the Server-Sent Events encoding of what they receive.
package watch

import (
	"bytes"
	"strconv"
)

// Event types beyond the change types (store.ChangeAdded, ...).
const (
	// Bookmark carries only a resource version: every change up to it
	// that the watch selects has been sent. It keeps an idle stream
	// alive and moves the client's resume point.
	Bookmark = "BOOKMARK"
	// Error ends a stream; its object is a problem document saying why
	// (the watcher fell behind, the server is shutting down).
	Error = "ERROR"
)

// ContentType is what a watch answers with: Server-Sent Events.
const ContentType = "text/event-stream; charset=utf-8"

// AppendEvent appends one Server-Sent Event: its type as the event name,
// the resource version as its id (what a browser's EventSource sends
// back as Last-Event-ID when it reconnects) and as data the JSON
// document {"type", "resource_version", "object"}. object is JSON (nil
// for none); a version of 0 sends no id, as an Error without one.
func AppendEvent(b []byte, typ string, version int64, object []byte) []byte {
	b = append(b, "event: "...)
	b = append(b, typ...)
	b = append(b, '\n')
	v := strconv.FormatInt(version, 10)
	if version > 0 {
		b = append(b, "id: "...)
		b = append(b, v...)
		b = append(b, '\n')
	}
	data := make([]byte, 0, len(object)+64)
	data = append(data, `{"type":"`...)
	data = append(data, typ...)
	data = append(data, '"')
	if version > 0 {
		data = append(data, `,"resource_version":"`...)
		data = append(data, v...)
		data = append(data, '"')
	}
	if object != nil {
		data = append(data, `,"object":`...)
		data = append(data, object...)
	}
	data = append(data, '}')
	// A data field ends at a newline; compact JSON has none, but one
	// would split the document rather than end the event.
	for line := range bytes.SplitSeq(data, []byte{'\n'}) {
		b = append(b, "data: "...)
		b = append(b, line...)
		b = append(b, '\n')
	}
	return append(b, '\n')
}
