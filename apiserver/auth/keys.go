package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
)

// keySource holds one issuer's verification keys, read from a file once
// or fetched from a URL: at start, when a token names a key id the set
// does not hold (at most every `every`), and when the keys are older than
// maxAge. A rotation at the URL is so picked up without a restart.
type keySource struct {
	url, file string
	client    *http.Client
	every     time.Duration
	maxAge    time.Duration

	mu          sync.RWMutex
	keys        jose.JSONWebKeySet
	fetched     time.Time // when keys were last fetched successfully
	lastAttempt time.Time // when a fetch last started
}

func (s *keySource) load() error {
	raw, err := os.ReadFile(s.file)
	if err != nil {
		return fmt.Errorf("read the JWKS file %s: %w", s.file, err)
	}
	if err := s.set(raw); err != nil {
		return fmt.Errorf("%s: %w", s.file, err)
	}
	return nil
}

func (s *keySource) set(raw []byte) error {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(raw, &set); err != nil {
		return fmt.Errorf("not a JWKS document: %w", err)
	}
	if len(set.Keys) == 0 {
		return errors.New("the JWKS holds no keys")
	}
	s.mu.Lock()
	s.keys, s.fetched = set, time.Now()
	s.mu.Unlock()
	return nil
}

// refresh fetches the URL unless a fetch started less than `every` ago;
// fetched says whether this call fetched new keys.
func (s *keySource) refresh(ctx context.Context) (fetched bool, err error) {
	s.mu.Lock()
	if !s.lastAttempt.IsZero() && time.Since(s.lastAttempt) < s.every {
		s.mu.Unlock()
		return false, nil
	}
	s.lastAttempt = time.Now()
	s.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return false, fmt.Errorf("fetch JWKS %s: %w", s.url, err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return false, fmt.Errorf("fetch JWKS %s: %w", s.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("fetch JWKS %s: HTTP %d", s.url, resp.StatusCode)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return false, fmt.Errorf("fetch JWKS %s: %w", s.url, err)
	}
	if err := s.set(raw); err != nil {
		return false, fmt.Errorf("JWKS %s: %w", s.url, err)
	}
	return true, nil
}

// find returns the key a token names: by kid, or, for a token without
// one, the set's only key or, when it holds several, all of them (each is
// tried).
func (s *keySource) find(kid string) (any, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if kid == "" {
		switch len(s.keys.Keys) {
		case 0:
			return nil, false
		case 1:
			return s.keys.Keys[0].Key, true
		}
		set := jwt.VerificationKeySet{}
		for _, k := range s.keys.Keys {
			set.Keys = append(set.Keys, k.Key)
		}
		return set, true
	}
	for _, k := range s.keys.Key(kid) {
		return k.Key, true
	}
	return nil, false
}

// stale reports keys fetched from a URL longer than maxAge ago.
func (s *keySource) stale() bool {
	if s.url == "" {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return time.Since(s.fetched) > s.maxAge
}

func (s *keySource) key(ctx context.Context, kid string) (any, error) {
	if s.stale() {
		// A failed fetch keeps the keys held: an issuer briefly down
		// must not lock everyone out.
		_, _ = s.refresh(ctx)
	}
	if k, ok := s.find(kid); ok {
		return k, nil
	}
	if s.url != "" {
		if _, err := s.refresh(ctx); err != nil {
			return nil, err
		}
		if k, ok := s.find(kid); ok {
			return k, nil
		}
	}
	// The kid comes from the caller: quoted, and cut short in the answer
	// and the log.
	return nil, fmt.Errorf("no key with id %q in the JWKS", truncate(kid, 64))
}
