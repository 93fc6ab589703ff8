// Package schemaerr turns a JSON Schema validation error into the
// protocol's schema_errors (Spec 07 section 3.3), worded once for every
// place that validates arguments: the server's invoke, the MCP bridge
// before it asks for consent, and the gateway before it calls an upstream.
// One entry per leaf error, sorted by path, at most [Max]; every piece of
// the arguments an entry repeats (a property name, a path, a value in a
// message) is bounded and escaped, so an answer never grows with what the
// caller sent.
package schemaerr

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/manglecp/manglecp/protocol"
)

// Max is the most schema errors one answer carries.
const Max = 20

// maxMessageBytes bounds one message: the validator's own words may repeat
// a value of the arguments (a string that misses a pattern).
const maxMessageBytes = 300

// Errors returns the schema errors of err, an error from
// (*jsonschema.Schema).Validate. An error of another kind gives one entry
// that says the arguments do not validate. A nil err gives nil.
func Errors(err error) []protocol.SchemaError {
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []protocol.SchemaError{{Message: "the arguments do not match the tool's input schema", Keyword: "$schema"}}
	}
	printer := message.NewPrinter(language.English)
	var out []protocol.SchemaError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(out) >= 4*Max { // enough to sort, bounded work
			return
		}
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		path := pathOf(e.InstanceLocation)
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			for _, m := range k.Missing {
				out = append(out, protocol.SchemaError{Path: join(path, m), Keyword: "required",
					Message: fmt.Sprintf("required argument %s is missing", protocol.Quote(m))})
			}
			return
		case *kind.AdditionalProperties:
			for _, p := range k.Properties {
				out = append(out, protocol.SchemaError{Path: join(path, p), Keyword: "additionalProperties",
					Message: fmt.Sprintf("argument %s is not a parameter of this tool", protocol.Quote(p))})
			}
			return
		}
		keyword := ""
		if kw := e.ErrorKind.KeywordPath(); len(kw) > 0 {
			keyword = kw[len(kw)-1]
		}
		out = append(out, protocol.SchemaError{Path: path, Keyword: keyword,
			Message: clip(e.ErrorKind.LocalizedString(printer), maxMessageBytes)})
	}
	walk(ve)
	slices.SortStableFunc(out, func(a, b protocol.SchemaError) int { return strings.Compare(a.Path, b.Path) })
	if len(out) > Max {
		out = out[:Max]
	}
	return out
}

// pathOf is the JSON Pointer of an instance location, each segment clipped
// (protocol.Clip).
func pathOf(loc []string) string {
	var b strings.Builder
	for _, s := range loc {
		b.WriteByte('/')
		b.WriteString(protocol.Clip(s))
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}

// join appends the clipped segment name to path.
func join(path, name string) string {
	return strings.TrimSuffix(path, "/") + "/" + protocol.Clip(name)
}

// clip cuts s to at most n bytes at a rune boundary, marked with "...".
func clip(s string, n int) string { return protocol.ClipN(s, n) }
