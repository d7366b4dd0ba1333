package loopback

import (
	"net"
	"strconv"
	"testing"
)

func TestPortSkipsBusyAndAvoidedPorts(t *testing.T) {
	first, err := Port()
	if err != nil {
		t.Fatal(err)
	}
	// Ports are handed out in sequence; the next two are the ones a flag
	// named, the third is held by a listener.
	Avoid(first+1, first+2)
	if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(first+3))); err == nil {
		defer l.Close()
	} // else someone else holds it: busy all the same
	got, err := Port()
	if err != nil {
		t.Fatal(err)
	}
	if got >= first && got <= first+3 {
		t.Errorf("Port() = %d after %d, with %d and %d avoided and %d busy; want none of them", got, first, first+1, first+2, first+3)
	}
}
