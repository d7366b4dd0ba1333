package pgcluster

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// Password reads the password kept in file, or generates one (32 random
// bytes, hex) and writes it there, readable only by its owner: the
// cluster's account when cred names one, so initdb can read it.
func Password(file string, cred *syscall.Credential) (string, error) {
	raw, err := os.ReadFile(file)
	switch {
	case err == nil:
		pw := strings.TrimSpace(string(raw))
		if !validPassword(pw) {
			return "", fmt.Errorf("%s: not a password this release wrote (64 hex digits); delete it only together with the cluster's data folder beside it", file)
		}
		return pw, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("read the database password: %w", err)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	pw := hex.EncodeToString(b)
	if err := os.WriteFile(file, []byte(pw+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write the database password: %w", err)
	}
	if cred != nil {
		if err := os.Chown(file, int(cred.Uid), int(cred.Gid)); err != nil {
			return "", fmt.Errorf("hand the database password to the cluster's account: %w", err)
		}
	}
	return pw, nil
}

func validPassword(pw string) bool {
	if len(pw) != 64 {
		return false
	}
	_, err := hex.DecodeString(pw)
	return err == nil
}

// RequirePassword rewrites a pg_hba.conf so that no rule trusts a
// connection without a password: "trust" becomes "scram-sha-256". It
// reports whether anything changed. Comments and other methods are kept.
func RequirePassword(hba string) (string, bool) {
	lines := strings.Split(hba, "\n")
	changed := false
	for i, line := range lines {
		body, comment, _ := strings.Cut(line, "#")
		fields := strings.Fields(body)
		// The method follows type, database and user, and for every type
		// but local an address (an address and a mask take two fields).
		method := -1
		switch {
		case len(fields) >= 4 && fields[0] == "local":
			method = 3
		case len(fields) >= 5:
			method = 4
			if len(fields) >= 6 && fields[4] != "trust" && fields[5] == "trust" {
				method = 5 // address and netmask
			}
		}
		if method < 0 || fields[method] != "trust" {
			continue
		}
		fields[method] = "scram-sha-256"
		line = strings.Join(fields, " ")
		if strings.Contains(lines[i], "#") {
			line += " #" + comment
		}
		lines[i] = line
		changed = true
	}
	return strings.Join(lines, "\n"), changed
}
