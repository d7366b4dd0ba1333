// Package systemsecret holds the shared secret a system caller (the
// reconciler, the adapters) presents behind a tenancy gateway: the value
// of the tenancy file's system header. The API and the workers read the
// same file with the same rules, so a file one accepts the other does
// too.
package systemsecret

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
)

const (
	// MinLength is the shortest secret accepted: 32 random visible
	// characters are far beyond guessing over HTTP.
	MinLength = 32
	// MaxLength bounds a secret; it travels in a header on every call.
	MaxLength = 4096
)

// Fix says how to make a secret that passes, for messages.
const Fix = "write at least 32 random visible ASCII characters on one line, e.g. `openssl rand -hex 32 > system-secret`"

// Secret is a system secret read from a file. The zero Secret matches
// nothing. Its content sits behind a pointer, which fmt prints as an
// address when a Secret is a field of what is printed (%+v of a config):
// the secret is never written out by accident.
type Secret struct{ p *secret }

type secret struct {
	value  string
	digest [sha256.Size]byte
}

// Read reads and checks a secret file (see Parse). Errors name the file.
func Read(path string) (Secret, error) {
	f, err := os.Open(path)
	if err != nil {
		return Secret{}, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, MaxLength+3))
	if err != nil {
		return Secret{}, fmt.Errorf("read %s: %w", path, err)
	}
	s, err := Parse(raw)
	if err != nil {
		return Secret{}, fmt.Errorf("%s %w", path, err)
	}
	return s, nil
}

// Parse checks a secret file's content: one line of MinLength to
// MaxLength visible ASCII characters (no space, tab or control byte, no
// byte beyond ASCII); one trailing newline (LF or CRLF) is not part of
// it. The errors never quote the content.
func Parse(raw []byte) (Secret, error) {
	if n := len(raw); n > 0 && raw[n-1] == '\n' {
		raw = raw[:n-1]
		if n > 1 && raw[n-2] == '\r' {
			raw = raw[:n-2]
		}
	}
	switch {
	case len(raw) == 0:
		return Secret{}, errors.New("is empty")
	case len(raw) < MinLength:
		return Secret{}, fmt.Errorf("holds %d characters, fewer than the %d a system secret needs", len(raw), MinLength)
	case len(raw) > MaxLength:
		return Secret{}, fmt.Errorf("holds more than %d characters", MaxLength)
	}
	for i, b := range raw {
		if b < 0x21 || b > 0x7e {
			return Secret{}, fmt.Errorf("has the invisible or non-ASCII byte 0x%02x at offset %d: only visible ASCII characters may be sent in a header", b, i)
		}
	}
	return Secret{&secret{value: string(raw), digest: sha256.Sum256(raw)}}, nil
}

// Value is the secret, for the workers to send.
func (s Secret) Value() string {
	if s.p == nil {
		return ""
	}
	return s.p.value
}

// Set reports whether the secret was read.
func (s Secret) Set() bool { return s.p != nil }

// Matches reports, in time independent of where v and the secret differ
// and of their lengths, whether v is the secret: both are hashed, and the
// digests compared with crypto/subtle.
func (s Secret) Matches(v string) bool {
	if !s.Set() {
		return false
	}
	d := sha256.Sum256([]byte(v))
	return subtle.ConstantTimeCompare(d[:], s.p.digest[:]) == 1
}

// String never shows the secret, should a Secret be logged.
func (s Secret) String() string {
	if !s.Set() {
		return "<no system secret>"
	}
	return "<system secret>"
}
