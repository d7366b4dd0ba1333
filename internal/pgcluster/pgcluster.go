// Package pgcluster finds PostgreSQL's server binaries and the account a
// cluster of them runs as: what the test helpers' throwaway clusters and
// the production topology's cluster share.
package pgcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
)

// BinDir finds initdb and postgres: dir when given, else the newest
// /usr/lib/postgresql/*/bin, else $PATH. how says, in the error, how to
// name another directory.
func BinDir(dir, how string) (string, error) {
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err != nil {
			return "", fmt.Errorf("PostgreSQL binaries: no initdb in %s", dir)
		}
		return dir, nil
	}
	candidates, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(candidates)))
	for _, c := range candidates {
		if _, err := os.Stat(filepath.Join(c, "initdb")); err == nil {
			return c, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("PostgreSQL server binaries (initdb, postgres) not found: install them " +
		"(Debian: apt-get install postgresql-15) or " + how)
}

// Owner returns the credentials a cluster in dir runs with, handing dir
// to them: PostgreSQL refuses to run as root, so as root the cluster
// belongs to the "postgres" account (nil, "": the caller's own).
func Owner(dir string) (*syscall.Credential, string, error) {
	if os.Geteuid() != 0 {
		return nil, "", nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, "", fmt.Errorf("running as root needs a 'postgres' account to own the PostgreSQL cluster: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, "", err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, "postgres", nil
}
