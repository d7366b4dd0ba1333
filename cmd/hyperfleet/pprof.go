package main

import (
	"net/http"
	"net/http/pprof"

	"github.com/rs/zerolog"
)

// startPprof serves the Go profiler on its own address, never on the API's,
// so it cannot be exposed by accident with the API.
func startPprof(addr string, log zerolog.Logger) {
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	go func() {
		log.Info().Str("listen", addr).Msg("pprof listening")
		if err := http.ListenAndServe(addr, mux); err != nil {
			log.Error().Err(err).Msg("pprof server stopped")
		}
	}()
}
