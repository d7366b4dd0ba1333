// Package problem implements the API's error responses: RFC 9457
// application/problem+json documents with stable HYPERFLEET-* codes.
//
// Handlers never write errors themselves; they return a *Problem (or any
// error, which becomes an opaque 500) and the router renders it.
package problem

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ContentType is the media type of every error response.
const ContentType = "application/problem+json"

// TypeBase prefixes the `type` URI of every problem; the suffix is the code,
// so clients can switch on either.
const TypeBase = "https://hyperfleet.io/problems/"

// Code is a stable machine-readable error code: HYPERFLEET-<CAT>-<NNN>.
type Code string

// The catalogue of codes. Codes are never reused or renumbered; docs/errors.md
// and the OpenAPI document list them.
const (
	CodeValidation       Code = "HYPERFLEET-VAL-001" // a field of the body is invalid
	CodeMalformedBody    Code = "HYPERFLEET-VAL-002" // the body is not valid JSON or has the wrong shape
	CodeInvalidParameter Code = "HYPERFLEET-VAL-003" // a query parameter (page, size, order...) is invalid
	CodeInvalidSearch    Code = "HYPERFLEET-VAL-004" // the search expression is malformed or names an unknown field
	CodeUnsupportedMedia Code = "HYPERFLEET-VAL-005" // Content-Type is not JSON
	CodeBodyTooLarge     Code = "HYPERFLEET-VAL-006" // the body exceeds the configured limit
	CodeHeadersTooLarge  Code = "HYPERFLEET-VAL-008" // the request line and headers exceed the limit
	CodeReadTimeout      Code = "HYPERFLEET-VAL-009" // the request body did not arrive within the read timeout
	CodeSpecSchema       Code = "HYPERFLEET-VAL-007" // spec does not match the configured OpenAPI schema
	CodeUnauthenticated  Code = "HYPERFLEET-AUT-001" // missing, malformed or invalid bearer token
	CodeSystemCredential Code = "HYPERFLEET-AUT-002" // the tenancy's system header carries neither the system secret nor false
	CodeForbidden        Code = "HYPERFLEET-AUZ-001" // authenticated, but not allowed (no identity claim, or the caller's role)
	CodeTenancy          Code = "HYPERFLEET-AUZ-002" // no valid tenancy: a required dimension missing, or a value invalid
	CodeNotFound         Code = "HYPERFLEET-NTF-001" // the resource does not exist
	CodeRouteNotFound    Code = "HYPERFLEET-NTF-002" // no such path
	CodeMethodNotAllowed Code = "HYPERFLEET-NTF-003" // the path exists, the method does not
	CodeNameConflict     Code = "HYPERFLEET-CNF-001" // the name is already taken
	CodeBeingDeleted     Code = "HYPERFLEET-CNF-002" // the resource (or its parent) is being deleted
	CodeNotDeleted       Code = "HYPERFLEET-CNF-003" // force-delete of a resource that is not soft-deleted
	CodeHasChildren      Code = "HYPERFLEET-CNF-004" // delete of a resource whose live children restrict it
	CodeReferenced       Code = "HYPERFLEET-CNF-005" // delete of a resource that live resources still reference
	CodeHasTenancy       Code = "HYPERFLEET-CNF-006" // a tenancy assigned to a resource that has another one (adoption is for resources without)
	CodeInternal         Code = "HYPERFLEET-INT-001" // unexpected server fault
	CodeUnavailable      Code = "HYPERFLEET-SVC-001" // a dependency (database) is unavailable or the server is shutting down
	CodeRequestTimeout   Code = "HYPERFLEET-SVC-002" // the request did not finish in time
	CodeStorageFull      Code = "HYPERFLEET-SVC-003" // the database has no space left for the write
	CodeWorkflowEngine   Code = "HYPERFLEET-SVC-004" // the workflow engine (Temporal) did not answer a read of a reconciliation
	CodeReadBudget       Code = "HYPERFLEET-SVC-005" // this replica's reads of reconciliations a second are used up for now
	CodeWatchCapacity    Code = "HYPERFLEET-SVC-006" // this replica serves as many watches as --watch-max allows
	CodeWatchTenantLimit Code = "HYPERFLEET-SVC-007" // the caller's tenancy holds as many watches on this replica as --watch-max-per-tenant allows
	CodeWatchDropped     Code = "HYPERFLEET-SVC-008" // (in a watch's ERROR event) the watcher fell behind the changes and was closed
	CodeWatchExpired     Code = "HYPERFLEET-NTF-004" // a watch's resourceVersion is older than the change history kept (or not one of its versions)
)

// FieldError names one invalid input: where it is, what was sent, which rule
// it broke and what to do.
type FieldError struct {
	Field      string `json:"field"`
	Value      any    `json:"value,omitempty"`
	Constraint string `json:"constraint,omitempty"`
	Message    string `json:"message"`
}

// Problem is an RFC 9457 problem document and an error.
type Problem struct {
	Type      string       `json:"type"`
	Title     string       `json:"title"`
	Status    int          `json:"status"`
	Detail    string       `json:"detail,omitempty"`
	Instance  string       `json:"instance,omitempty"`
	Code      Code         `json:"code"`
	Timestamp time.Time    `json:"timestamp"`
	Errors    []FieldError `json:"errors,omitempty"`

	cause error
	// retryAfter is the wait a 503 tells the client (0: the router's).
	retryAfter time.Duration
}

func (p *Problem) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d %s", p.Code, p.Status, p.Title)
	if p.Detail != "" {
		b.WriteString(": ")
		b.WriteString(p.Detail)
	}
	for _, e := range p.Errors {
		if item := e.Field + ": " + e.Message; !strings.Contains(p.Detail, item) {
			b.WriteString("; " + item)
		}
	}
	return b.String()
}

// Unwrap exposes the internal cause (logged, never rendered).
func (p *Problem) Unwrap() error { return p.cause }

// New builds a problem with the title that belongs to its status.
func New(status int, code Code, detail string) *Problem {
	return &Problem{
		Type:   TypeBase + string(code),
		Title:  http.StatusText(status),
		Status: status,
		Detail: detail,
		Code:   code,
	}
}

// Newf is New with a formatted detail.
func Newf(status int, code Code, format string, args ...any) *Problem {
	return New(status, code, fmt.Sprintf(format, args...))
}

// WithErrors attaches field errors.
func (p *Problem) WithErrors(errs ...FieldError) *Problem {
	p.Errors = append(p.Errors, errs...)
	return p
}

// WithCause records an internal error for the logs.
func (p *Problem) WithCause(err error) *Problem {
	p.cause = err
	return p
}

// WithRetryAfter sets the wait a 503 names in its Retry-After header,
// for a refusal that clears sooner than an outage.
func (p *Problem) WithRetryAfter(d time.Duration) *Problem {
	p.retryAfter = d
	return p
}

// RetryAfter is the Retry-After value in seconds: the wait set with
// WithRetryAfter (rounded up, at least 1), else def's.
func (p *Problem) RetryAfter(def time.Duration) string {
	d := p.retryAfter
	if d <= 0 {
		d = def
	}
	return strconv.FormatInt(max(1, int64((d+time.Second-1)/time.Second)), 10)
}

// Validation is the 400 for invalid body fields.
func Validation(errs ...FieldError) *Problem {
	detail := "The request body is invalid"
	if len(errs) == 1 {
		detail = errs[0].Field + ": " + errs[0].Message
	} else if len(errs) > 1 {
		detail = fmt.Sprintf("%d fields are invalid: %s", len(errs), joinFields(errs))
	}
	return New(http.StatusBadRequest, CodeValidation, detail).WithErrors(errs...)
}

// InvalidParameter is the 400 for a bad query parameter.
func InvalidParameter(param string, value any, message string) *Problem {
	return New(http.StatusBadRequest, CodeInvalidParameter, param+": "+message).
		WithErrors(FieldError{Field: param, Value: value, Message: message})
}

// NotFound is the 404 for a missing resource.
func NotFound(kind, id string) *Problem {
	return Newf(http.StatusNotFound, CodeNotFound, "%s %q not found", kind, id)
}

// Internal is the 500 for unexpected faults; the cause is logged, not sent.
func Internal(err error) *Problem {
	return New(http.StatusInternalServerError, CodeInternal,
		"The server failed to process the request; the error was logged").WithCause(err)
}

// From converts any error into a problem: problems pass through, anything
// else is an internal error.
func From(err error) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	return Internal(err)
}

func joinFields(errs []FieldError) string {
	names := make([]string, 0, len(errs))
	for _, e := range errs {
		names = append(names, e.Field)
	}
	return strings.Join(names, ", ")
}

// Truncate shortens a client's value echoed in a problem to at most n
// bytes (never splitting a character), marking the cut with "...".
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
