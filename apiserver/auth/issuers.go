package auth

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"
)

// issuersFile is the document --jwt-issuers-file names.
type issuersFile struct {
	Issuers []Issuer `yaml:"issuers"`
}

// LoadIssuers reads a JWT issuers file: `issuers:`, a list of {issuer,
// jwks_url or jwks_file, audience, identity_claim, ca_file}. Unknown
// fields are refused, naming the line, so a misspelt audience is not
// silently left unchecked.
func LoadIssuers(path string) ([]Issuer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("JWT issuers file: %w", err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, 1<<20+1))
	if err != nil {
		return nil, fmt.Errorf("JWT issuers file %s: %w", path, err)
	}
	if len(raw) > 1<<20 {
		return nil, fmt.Errorf("JWT issuers file %s is larger than 1 MiB: it lists issuers, nothing else", path)
	}
	var doc issuersFile
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("JWT issuers file %s is empty: list the trusted issuers under \"issuers\"", path)
		}
		return nil, fmt.Errorf("JWT issuers file %s: %w (each issuer takes issuer, jwks_url or jwks_file, audience, identity_claim and ca_file)", path, err)
	}
	if len(doc.Issuers) == 0 {
		return nil, fmt.Errorf("JWT issuers file %s lists no issuer: list the trusted issuers under \"issuers\"", path)
	}
	return doc.Issuers, nil
}
