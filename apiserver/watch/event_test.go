package watch

import "testing"

func TestAppendEvent(t *testing.T) {
	tests := []struct {
		name    string
		typ     string
		version int64
		object  []byte
		want    string
	}{
		{"change", "ADDED", 42, []byte(`{"id":"a"}`),
			"event: ADDED\nid: 42\ndata: {\"type\":\"ADDED\",\"resource_version\":\"42\",\"object\":{\"id\":\"a\"}}\n\n"},
		{"bookmark", Bookmark, 7, nil,
			"event: BOOKMARK\nid: 7\ndata: {\"type\":\"BOOKMARK\",\"resource_version\":\"7\"}\n\n"},
		{"bookmark at the start of an empty log", Bookmark, 0, nil,
			"event: BOOKMARK\ndata: {\"type\":\"BOOKMARK\"}\n\n"},
		{"error has no id", Error, 0, []byte(`{"status":503}`),
			"event: ERROR\ndata: {\"type\":\"ERROR\",\"object\":{\"status\":503}}\n\n"},
		{"a newline splits data, never the event", "MODIFIED", 3, []byte("{\"a\":\n1}"),
			"event: MODIFIED\nid: 3\ndata: {\"type\":\"MODIFIED\",\"resource_version\":\"3\",\"object\":{\"a\":\ndata: 1}}\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(AppendEvent(nil, tt.typ, tt.version, tt.object)); got != tt.want {
				t.Errorf("AppendEvent = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAppendEventAppends(t *testing.T) {
	b := AppendEvent([]byte("x"), Bookmark, 1, nil)
	if string(b[:8]) != "xevent: " {
		t.Errorf("AppendEvent dropped what b held: %q", b)
	}
}
