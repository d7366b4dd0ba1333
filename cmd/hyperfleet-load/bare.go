package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"time"

	"github.com/gin-gonic/gin"
)

// startBare fetches one stored cluster and starts this program again as
// the bare handler returning its bytes, in its own process like the API.
func startBare(ctx context.Context, l *loader, id string) (func(), string, error) {
	code, body, err := l.call(ctx, "GET", l.base+"/clusters/"+id, nil)
	if err != nil || code != 200 {
		return nil, "", fmt.Errorf("read the cluster the bare handler returns: %d %v", code, err)
	}
	f, err := os.CreateTemp("", "hyperfleet-bare-*.json")
	if err != nil {
		return nil, "", err
	}
	if _, err := f.Write(body); err != nil {
		f.Close()
		return nil, "", err
	}
	f.Close()
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(self, "--bare-serve", addr, "--bare-body", f.Name())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start the bare handler: %w", err)
	}
	stop := func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		os.Remove(f.Name())
	}
	if err := waitReady("http://" + addr + "/readyz"); err != nil {
		stop()
		return nil, "", fmt.Errorf("bare handler: %w", err)
	}
	return stop, "http://" + addr, nil
}

// serveBare is the ceiling: Gin in release mode, no middleware, one route
// answering with fixed bytes through the same c.Data path a JSON body
// takes.
func serveBare(addr, bodyFile string) error {
	body, err := os.ReadFile(bodyFile)
	if err != nil {
		return err
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/readyz", func(c *gin.Context) { c.Status(http.StatusOK) })
	r.GET("/api/hyperfleet/v1/clusters/:cluster_id", func(c *gin.Context) {
		c.Data(http.StatusOK, "application/json; charset=utf-8", body)
	})
	srv := &http.Server{Addr: addr, Handler: r, ReadHeaderTimeout: 10 * time.Second}
	return srv.ListenAndServe()
}
