package temporalclient

import (
	"testing"

	"github.com/rs/zerolog"
)

func TestLoopback(t *testing.T) {
	cases := map[string]bool{
		"127.0.0.1:7233":               true,
		"localhost:7233":               true,
		"[::1]:7233":                   true,
		"127.0.0.5:7233":               true,
		"temporal.internal:7233":       false,
		"10.0.0.4:7233":                false,
		"my-ns.a1b2c.tmprl.cloud:7233": false,
		"":                             false,
		"not a host":                   false,
	}
	for addr, want := range cases {
		if got := Loopback(addr); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestOptionsCompression(t *testing.T) {
	local, err := Options(Config{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if local.ConnectionOptions.GrpcCompression == nil {
		t.Error("default (loopback) address: compression not turned off")
	}
	remote, err := Options(Config{Address: "temporal.example.com:7233"}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if remote.ConnectionOptions.GrpcCompression != nil {
		t.Errorf("remote address: compression = %T, want the SDK default (gzip)", remote.ConnectionOptions.GrpcCompression)
	}
}
