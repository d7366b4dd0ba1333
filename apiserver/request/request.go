// Package request decodes request bodies strictly: one JSON object, no
// unknown fields, no trailing data, and every failure a 400 that names the
// offending field. It is fuzzed: no input may make it panic.
package request

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver/problem"
	"github.com/hyperfleet/hyperfleet/resource"
)

// DefaultBodyLimit bounds request bodies (1 MiB).
const DefaultBodyLimit = 1 << 20

// DefaultSpecLimit bounds the spec of one cluster or node pool (64 KiB, as
// sent). Lists return up to 100 resources a page, so this limit, not the
// body limit, sets what one list response may hold.
const DefaultSpecLimit = 64 << 10

// DefaultStatusDataLimit bounds a status report's data and, separately,
// its metadata (16 KiB each, as sent). A resource lists every adapter's
// report, so this limit, not the body limit, sets what one statuses list
// may hold; it also bounds what condition rules iterate.
const DefaultStatusDataLimit = 16 << 10

// ReadBody reads a JSON request body within limit bytes.
func ReadBody(r *http.Request, limit int64) ([]byte, *problem.Problem) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !isJSON(ct) {
		return nil, problem.Newf(http.StatusUnsupportedMediaType, problem.CodeUnsupportedMedia,
			"Content-Type %q is not supported; send application/json", ct)
	}
	if limit <= 0 {
		limit = DefaultBodyLimit
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, problem.New(http.StatusRequestTimeout, problem.CodeReadTimeout,
			"the request body did not arrive within the server's read timeout; send it at once").WithCause(err)
	}
	if err != nil {
		return nil, problem.New(http.StatusBadRequest, problem.CodeMalformedBody, "the request body could not be read").WithCause(err)
	}
	if int64(len(body)) > limit {
		return nil, problem.Newf(http.StatusRequestEntityTooLarge, problem.CodeBodyTooLarge,
			"the request body is larger than %d bytes", limit)
	}
	return body, nil
}

// isJSON accepts JSON media types, and curl's default for -d
// (application/x-www-form-urlencoded): the body is still parsed as JSON, so
// `curl -d '{...}'` without a header works instead of failing with 415.
func isJSON(contentType string) bool {
	mt := strings.ToLower(strings.TrimSpace(strings.SplitN(contentType, ";", 2)[0]))
	return mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "application/x-www-form-urlencoded"
}

// Decode unmarshals one JSON object into dst, refusing unknown fields and
// everything checkStrict refuses.
func Decode(body []byte, dst any) *problem.Problem {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return malformed("", "the request body is empty; send a JSON object")
	}
	if trimmed[0] != '{' {
		return malformed("", "the request body must be a JSON object")
	}
	if serr := checkStrict(trimmed, dst); serr != nil {
		return malformed(problem.Truncate(serr.field, 256), serr.message)
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err)
	}
	if dec.More() {
		return malformed("", "the request body holds more than one JSON value")
	}
	if _, err := dec.Token(); err != io.EOF {
		return malformed("", "the request body holds data after the JSON object")
	}
	return nil
}

func decodeError(err error) *problem.Problem {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return malformed("", fmt.Sprintf("the request body is not valid JSON (byte %d: %s)", syntax.Offset, syntax.Error()))
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "(body)"
		}
		return malformed(field, fmt.Sprintf("%s: expected %s, got %s", field, jsonType(typ.Type.Kind().String(), typ.Type.String()), typ.Value))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return malformed("", "the request body ends in the middle of a JSON value")
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return malformed(name, fmt.Sprintf("unknown field %q", name))
	}
	return malformed("", "the request body could not be decoded: "+strings.TrimPrefix(msg, "json: "))
}

func jsonType(kind, goType string) string {
	switch kind {
	case "string":
		return "a string"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return "a " + goType
}

func malformed(field, message string) *problem.Problem {
	p := problem.New(http.StatusBadRequest, problem.CodeMalformedBody, message)
	if field != "" {
		p.Errors = []problem.FieldError{{Field: field, Message: message}}
	}
	return p
}

// statusReportBody is the wire form of a status report: observed_time is
// read as text so a bad date names its field.
type statusReportBody struct {
	Adapter            string                     `json:"adapter"`
	ObservedGeneration int64                      `json:"observed_generation"`
	ObservedTime       *string                    `json:"observed_time"`
	Conditions         []resource.ReportCondition `json:"conditions"`
	Metadata           json.RawMessage            `json:"metadata"`
	Data               json.RawMessage            `json:"data"`
}

// DecodeStatusReport decodes an AdapterStatusCreateRequest.
func DecodeStatusReport(body []byte) (*resource.StatusReport, *problem.Problem) {
	var b statusReportBody
	if p := Decode(body, &b); p != nil {
		return nil, p
	}
	r := &resource.StatusReport{
		Adapter: b.Adapter, ObservedGeneration: b.ObservedGeneration, Conditions: b.Conditions,
		Metadata: b.Metadata, Data: b.Data,
	}
	if b.ObservedTime != nil {
		t, err := time.Parse(time.RFC3339Nano, *b.ObservedTime)
		if err != nil {
			return nil, problem.Validation(problem.FieldError{Field: "observed_time", Value: *b.ObservedTime,
				Constraint: "format=date-time", Message: "observed_time must be an RFC 3339 date-time, e.g. 2025-01-01T10:00:00Z"})
		}
		r.ObservedTime = t
	}
	return r, nil
}
