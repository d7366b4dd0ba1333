// Package pagetoken encodes the continuation tokens of list endpoints: an
// opaque string that names the position after the last item of a page in
// one query's order, so the next page starts there (a keyset read) instead
// of skipping rows (OFFSET). A token is bound to its query (kind, parent,
// search and order): used with another, it is refused rather than read as
// a position in an order it was not made for.
package pagetoken

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver/search"
)

// MaxLength bounds a token's text; longer input is refused before decoding.
const MaxLength = 2048

// version 1: {"v":1,"q":<query>,"p":<page>,"k":[<values>]}.
const version = 1

// Token is a decoded continuation token.
type Token struct {
	// Page is the number of the page the token reads (the page after the
	// one that returned it), reported as the list's page.
	Page int
	// After is the position the page starts after.
	After search.Cursor
}

type wire struct {
	V int       `json:"v"`
	Q string    `json:"q"`
	P int       `json:"p"`
	K []*string `json:"k"`
}

// Query fingerprints what a token is bound to.
func Query(kind, parentID, searchText string, order []search.OrderTerm) string {
	h := sha256.New()
	for _, s := range []string{kind, parentID, searchText} {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	for _, o := range order {
		fmt.Fprintf(h, "%s %t;", o.Column, o.Desc)
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:12])
}

// Encode writes the token of the page after a page whose last row had the
// order values c, in the full order (search.WithTieBreak) of query.
func Encode(query string, page int, order []search.OrderTerm, c search.Cursor) (string, error) {
	if len(c) != len(order) {
		return "", fmt.Errorf("position has %d values for an order of %d terms", len(c), len(order))
	}
	w := wire{V: version, Q: query, P: page, K: make([]*string, len(c))}
	for i, v := range c {
		var s string
		switch v := v.(type) {
		case nil:
			continue
		case time.Time:
			s = v.UTC().Format(time.RFC3339Nano)
		case int64:
			s = strconv.FormatInt(v, 10)
		case string:
			s = v
		default:
			return "", fmt.Errorf("%s: cannot encode %T", order[i].Column, v)
		}
		w.K[i] = &s
	}
	b, err := json.Marshal(w)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// ErrForeign says a well-formed token was issued for another query.
var ErrForeign = errors.New("was issued for a list with another kind, parent, search or order; send the same parameters as the request that returned it")

// Decode reads a token for query, whose full order is order. Every error
// is the client's: a token that is not one this API issued, or was issued
// for another query.
func Decode(s, query string, order []search.OrderTerm) (Token, error) {
	if len(s) > MaxLength {
		return Token{}, fmt.Errorf("is %d characters long; a token this API issues is shorter than %d", len(s), MaxLength)
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Token{}, errors.New("is not a token this API issued (not base64url)")
	}
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return Token{}, errors.New("is not a token this API issued (not its encoding)")
	}
	if w.V != version {
		return Token{}, fmt.Errorf("has version %d; this API reads version %d", w.V, version)
	}
	if w.Q != query {
		return Token{}, ErrForeign
	}
	if w.P < 2 || w.P > 1_000_000_000 {
		return Token{}, fmt.Errorf("names page %d, which no token names", w.P)
	}
	if len(w.K) != len(order) {
		return Token{}, ErrForeign
	}
	c := make(search.Cursor, len(w.K))
	for i, o := range order {
		col, ok := search.ColumnOf(o.Column)
		if !ok {
			return Token{}, ErrForeign
		}
		v, err := value(col, w.K[i])
		if err != nil {
			return Token{}, fmt.Errorf("holds an invalid %s: %w", o.Column, err)
		}
		c[i] = v
	}
	return Token{Page: w.P, After: c}, nil
}

func value(col search.Column, s *string) (any, error) {
	if s == nil {
		if !col.Nullable {
			return nil, errors.New("null in a column that is never null")
		}
		return nil, nil
	}
	switch col.Type {
	case search.TimeColumn:
		t, err := time.Parse(time.RFC3339Nano, *s)
		if err != nil {
			return nil, err
		}
		return t.UTC(), nil
	case search.IntColumn:
		return strconv.ParseInt(*s, 10, 64)
	default:
		return *s, nil
	}
}
