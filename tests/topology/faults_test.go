//go:build integration

package topology_test

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// burstSize is how many clusters each fault's burst creates (a quarter of
// them patched to a second generation).
const burstSize = 240

// Contract (production topology): during a burst of creates, with each
// fault in turn, every cluster ends Reconciled at its latest generation,
// no outbox row is left, and the replicas answer no 5xx but the 503 (with
// Retry-After) that says HyperFleet's database is down. Each fault's
// recovery (from the fault to the last cluster Reconciled) is logged for
// docs/reliability.md.
func TestFaultsOnTheProductionShape(t *testing.T) {
	// An operator's secret in the supervisor's environment, which no
	// process needs.
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-for-the-children")
	s := startShape(t, nil)
	api := s.tp.APIURLs()
	recovery := map[string]time.Duration{}
	before := s.manifest()
	for _, name := range []string{"api-1", "api-2", "worker-1", "worker-2", "temporal-frontend", "temporal-history",
		"temporal-matching", "temporal-worker", "postgres", "postgres-temporal"} {
		p, ok := before[name]
		if !ok || p.PID == 0 || len(p.Argv) == 0 || p.Dir == "" || len(p.Env) == 0 {
			t.Errorf("processes.json entry of %s = %+v, want its pid, argv, directory and environment", name, p)
		}
		// Issue 43: each process gets the variables it needs, not the
		// operator's whole environment.
		for _, kv := range p.Env {
			if k, _, _ := strings.Cut(kv, "="); k == "AWS_SECRET_ACCESS_KEY" {
				t.Errorf("processes.json gives %s the supervisor's %s", name, k)
			}
		}
	}
	// It holds every process's environment: the operator's alone.
	if fi, err := os.Stat(s.tp.ManifestPath()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("processes.json mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}

	// A burst with no fault: the baseline the recoveries compare with.
	t.Run("no fault", func(t *testing.T) {
		b := startBurst(t, api, burstSize, 8, "baseline")
		b.wait(t, 5*time.Minute)
		start := time.Now()
		s.waitAllReconciled(3 * time.Minute)
		recovery["none (baseline: burst end to all Reconciled)"] = time.Since(start)
		noFiveXX(t, b, false)
	})

	// The hand-off is frozen (Temporal's frontend stopped with SIGSTOP), so
	// api-1 certainly dies between its commits and their hand-off; then
	// api-2's relay must deliver api-1's rows.
	t.Run("API replica killed between commit and hand-off", func(t *testing.T) {
		frontend := s.tp.Process("temporal-frontend")
		b := startBurst(t, api[:1], burstSize, 8, "api-killed")
		b.waitCreated(t, burstSize/3, 2*time.Minute)
		if err := signalProcess(frontend.PID, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		// Commits go on; hand-offs cannot. The burst writes only to api-1,
		// so it must be done before api-1 dies: every row it wrote since
		// the freeze is then committed and not handed off.
		b.wait(t, 2*time.Minute)
		s.kill("api-1")
		fault := time.Now()
		pending := s.outboxRows()
		if err := signalProcess(frontend.PID, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		if pending == 0 {
			t.Fatal("no outbox row was pending when api-1 died: the fault did not hit between commit and hand-off")
		}
		t.Logf("api-1 killed with %d outbox rows not handed off", pending)
		// The burst's client moves to the surviving replica.
		b2 := startBurst(t, api[1:], burstSize/2, 8, "api-killed-after")
		b.wait(t, 5*time.Minute)
		b2.wait(t, 5*time.Minute)
		recovery["API replica killed (SIGKILL) between commit and hand-off"] = s.waitAllReconciled(5 * time.Minute).Sub(fault)
		noFiveXX(t, b2, false)
		s.restart("api-1")
		// processes.json says what runs now: the new instance's pid, the
		// same command.
		after := s.manifest()["api-1"]
		if after.PID == 0 || after.PID == before["api-1"].PID || strings.Join(after.Argv, " ") != strings.Join(before["api-1"].Argv, " ") {
			t.Errorf("processes.json after the restart: api-1 = %+v, was pid %d", after, before["api-1"].PID)
		}
	})

	t.Run("worker killed mid-activity", func(t *testing.T) {
		b := startBurst(t, api, burstSize, 8, "worker-killed")
		b.waitCreated(t, burstSize/3, 2*time.Minute)
		s.kill("worker-1")
		fault := time.Now()
		b.wait(t, 5*time.Minute)
		recovery["worker killed (SIGKILL) mid-activity"] = s.waitAllReconciled(5 * time.Minute).Sub(fault)
		noFiveXX(t, b, false)
		s.restart("worker-1")
	})

	for _, svc := range []string{"temporal-history", "temporal-matching"} {
		t.Run(svc+" killed and restarted", func(t *testing.T) {
			b := startBurst(t, api, burstSize, 8, strings.TrimPrefix(svc, "temporal-")+"-killed")
			b.waitCreated(t, burstSize/3, 2*time.Minute)
			s.kill(svc)
			fault := time.Now()
			s.restart(svc)
			b.wait(t, 5*time.Minute)
			recovery[svc+" killed (SIGKILL) and restarted"] = s.waitAllReconciled(5 * time.Minute).Sub(fault)
			noFiveXX(t, b, false)
		})
	}

	for _, db := range []struct{ process, what string }{
		{"postgres", "HyperFleet's PostgreSQL"},
		{"postgres-temporal", "Temporal's PostgreSQL"},
	} {
		t.Run(db.what+" restarted", func(t *testing.T) {
			b := startBurst(t, api, burstSize, 8, db.process+"-restarted")
			b.waitCreated(t, burstSize/3, 2*time.Minute)
			// Immediate shutdown, as a crash: connections cut, no
			// checkpoint; recovery from the WAL on start.
			if err := s.tp.Process(db.process).Signal(syscall.SIGQUIT, 30*time.Second); err != nil {
				t.Fatal(err)
			}
			fault := time.Now()
			// Not a wait for a condition: the database stays down for a
			// while, as after a crash, before it is restarted.
			time.Sleep(2 * time.Second)
			s.restart(db.process)
			b.wait(t, 5*time.Minute)
			recovery[db.what+" restarted"] = s.waitAllReconciled(5 * time.Minute).Sub(fault)
			noFiveXX(t, b, db.process == "postgres")
		})
	}

	for what, d := range recovery {
		t.Logf("recovery: %-60s %6.1f s", what, d.Seconds())
	}
}

// noFiveXX fails on any 5xx a replica answered; with databaseDown, 503s
// that carry Retry-After (HyperFleet's database was down) are expected.
func noFiveXX(t *testing.T, b *burst, databaseDown bool) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	unavailable := 0
	for replica, answers := range b.fivexx {
		for _, a := range answers {
			if databaseDown && strings.Contains(a, ": 503 ") && !strings.HasSuffix(a, `(Retry-After "")`) {
				unavailable++
				continue
			}
			t.Errorf("%s answered %s", replica, a)
		}
	}
	if unavailable > 0 {
		t.Logf("%d requests answered 503 with Retry-After while the database was down, retried by the client", unavailable)
	}
}

func signalProcess(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }
