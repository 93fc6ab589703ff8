// Package schema is the repository's one setup of JSON Schema 2020-12
// (the dialect of Spec 06): the server's macro-tool input schemas, the
// kernel's contract checks, the gateway's upstream schemas and the MCP
// bridge's check of a server's schemas all compile and validate here.
//
// Schemas may come from a stranger (an upstream MCP server, a MangleCP
// server behind the bridge), so compiling one never reads anything beyond
// the document itself: a $ref, $schema or $id that points to a file or a
// network address is refused, and the refusal names neither the address
// nor what is there. The cost is bounded before any work is done: the
// document's size and nesting are checked before compiling; after
// compiling (linear in the document), a static analysis bounds how many
// subschemas one argument value can be checked against ($ref, allOf,
// anyOf, oneOf, not, if/then/else multiply; applicators into properties
// and items follow, up to the protocol's nesting depth), and a schema whose
// bound is over [Limits.MaxExpansion] is refused; a validation whose bound
// (that figure summed over the arguments' values) is over
// [Limits.MaxEvaluations] is refused before it starts. Validation runs on
// the caller's goroutine and ends in bounded time, so nothing keeps
// working after a caller gives up.
//
// The package knows the JSON Schema library and the protocol's limits;
// never Mangle (the MCP bridge uses it).
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/message"

	"github.com/manglecp/manglecp/protocol"
)

// Limits bound what a schema may cost. The zero value of a field means its
// default ([DefaultLimits]).
type Limits struct {
	// MaxBytes bounds the schema's JSON encoding.
	MaxBytes int
	// MaxDepth bounds the nesting of JSON values in the schema document.
	MaxDepth int
	// MaxSubschemas bounds the schema objects the compiled schema holds.
	MaxSubschemas int
	// MaxExpansion bounds how many subschemas one value of the arguments
	// can be checked against (the static bound described in the package
	// documentation).
	MaxExpansion int64
	// MaxEvaluations bounds one validation: the expansion of each value of
	// the arguments, summed over all of them.
	MaxEvaluations int64
}

// DefaultLimits are generous for any tool schema people write (a tool's
// schema is rarely over a few hundred subschemas; one value is usually
// checked against fewer than twenty) and keep a validation under about a
// tenth of a second of CPU on a slow machine.
func DefaultLimits() Limits {
	return Limits{
		MaxBytes:       256 << 10,
		MaxDepth:       protocol.MaxNestingDepth,
		MaxSubschemas:  2048,
		MaxExpansion:   1000,
		MaxEvaluations: 100_000,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxSubschemas <= 0 {
		l.MaxSubschemas = d.MaxSubschemas
	}
	if l.MaxExpansion <= 0 {
		l.MaxExpansion = d.MaxExpansion
	}
	if l.MaxEvaluations <= 0 {
		l.MaxEvaluations = d.MaxEvaluations
	}
	return l
}

// ErrRefused is matched (errors.Is) by every refusal of a schema: it
// refers outside itself, it is too large or too deep, or it is too costly
// to check arguments against.
var ErrRefused = errors.New("schema refused")

// Error is a refused or invalid schema. Its message is safe to show to a
// client: it never repeats an address, a value or a text of the schema.
type Error struct {
	// Refused: the schema may be valid JSON Schema but is not accepted
	// here (outside references, size, cost); otherwise it is invalid.
	Refused bool
	msg     string
}

func (e *Error) Error() string { return e.msg }

// Is makes a refusal match [ErrRefused].
func (e *Error) Is(target error) bool { return target == ErrRefused && e.Refused }

func refused(format string, args ...any) error {
	return &Error{Refused: true, msg: fmt.Sprintf(format, args...)}
}

// Schema is a compiled schema with its cost bound. It is safe for
// concurrent use.
type Schema struct {
	s     *jsonschema.Schema
	lim   Limits
	depth []int64 // depth[d]: evaluations of one value d levels deep; the last entry bounds deeper ones
}

// Compile compiles doc, a JSON Schema as decoded JSON (a map, a bool) or
// as raw JSON ([]byte, json.RawMessage), with limits lim (zero fields:
// defaults). Its errors are [*Error]s.
func Compile(doc any, lim Limits) (*Schema, error) {
	lim = lim.withDefaults()
	var raw []byte
	switch d := doc.(type) {
	case []byte:
		raw = d
	case json.RawMessage:
		raw = d
	default:
		var err error
		if raw, err = json.Marshal(doc); err != nil {
			return nil, &Error{msg: "the schema is not JSON"}
		}
	}
	if len(raw) > lim.MaxBytes {
		return nil, refused("the schema is %d bytes, over the limit of %d", len(raw), lim.MaxBytes)
	}
	if err := checkShape(raw, lim.MaxDepth, 2*lim.MaxSubschemas); err != nil {
		return nil, err
	}
	parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, &Error{msg: "the schema is not JSON"}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	const url = "mem://manglecp/schema.json"
	if err := c.AddResource(url, parsed); err != nil {
		return nil, &Error{msg: "the schema is not a valid JSON Schema"}
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, compileError(err)
	}
	depth, err := analyse(sch, lim)
	if err != nil {
		return nil, err
	}
	return &Schema{s: sch, lim: lim, depth: depth}, nil
}

// MustCompile is Compile for schemas written in the program; it panics on
// an error.
func MustCompile(doc any) *Schema {
	s, err := Compile(doc, Limits{})
	if err != nil {
		panic("schema: " + err.Error())
	}
	return s
}

// compileError words a compile error without the library's text, which
// may carry the address of a reference and what was found there.
func compileError(err error) error {
	var le *jsonschema.LoadURLError
	var ue *jsonschema.UnsupportedURLSchemeError
	var me *jsonschema.InvalidMetaSchemaURLError
	var de *jsonschema.UnsupportedDraftError
	var ve *jsonschema.SchemaValidationError
	switch {
	case errors.As(err, &le), errors.As(err, &ue):
		return refused("the schema refers to a document outside itself ($ref, $schema or $id to another address); such references are not loaded")
	case errors.As(err, &me), errors.As(err, &de):
		return refused("the schema names a meta-schema other than JSON Schema 2020-12 or an earlier draft")
	case errors.As(err, &ve):
		where := ""
		var leaf *jsonschema.ValidationError
		if errors.As(ve.Err, &leaf) {
			for len(leaf.Causes) > 0 {
				leaf = leaf.Causes[0]
			}
			where = " at " + protocol.Quote("/"+strings.Join(leaf.InstanceLocation, "/"))
		}
		return &Error{msg: "the schema is not a valid JSON Schema: a keyword has a value of the wrong kind" + where}
	}
	return &Error{msg: "the schema does not compile (for example a $ref to a location the document does not have, or an invalid pattern)"}
}

// Decode decodes JSON as [Schema.Validate] expects it (numbers as
// json.Number, so big integers and decimals are checked exactly).
func Decode(raw []byte) (any, error) {
	return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
}

// noLoader refuses every document beyond the one compiled (the library's
// meta-schemas are built in and load without it).
type noLoader struct{}

func (noLoader) Load(string) (any, error) { return nil, errors.New("not loaded") }

// checkShape refuses JSON nested deeper than max levels, or with more than
// maxObjects objects, before the document is decoded or compiled.
func checkShape(raw []byte, max, maxObjects int) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	depth, objects := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return &Error{msg: "the schema is not JSON"}
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if d == '{' {
					if objects++; objects > maxObjects {
						return refused("the schema has over %d objects", maxObjects)
					}
				}
				depth++
				if depth > max {
					return refused("the schema nests deeper than %d levels", max)
				}
			default:
				depth--
			}
		}
	}
}

// Validate checks v, arguments as decoded JSON (json.Number or float64
// numbers, map[string]any objects, []any arrays), against the schema. It
// returns nil, a *jsonschema.ValidationError (one cause per violation:
// internal/schemaerr words them) or, when the arguments are too large to
// check against this schema within [Limits.MaxEvaluations], a
// ValidationError saying so, before any checking is done.
func (s *Schema) Validate(v any) error {
	if n := s.cost(v, 0, 0); n > s.lim.MaxEvaluations {
		return &jsonschema.ValidationError{ErrorKind: &tooCostly{}}
	}
	return s.s.Validate(v)
}

// cost is the bound of checking v, d levels deep, plus acc; it stops
// counting past the limit.
func (s *Schema) cost(v any, d int, acc int64) int64 {
	acc = sat(acc, s.depth[min(d, len(s.depth)-1)])
	if acc > s.lim.MaxEvaluations {
		return acc
	}
	switch x := v.(type) {
	case map[string]any:
		for _, c := range x {
			if acc = s.cost(c, d+1, acc); acc > s.lim.MaxEvaluations {
				return acc
			}
		}
	case []any:
		for _, c := range x {
			if acc = s.cost(c, d+1, acc); acc > s.lim.MaxEvaluations {
				return acc
			}
		}
	}
	return acc
}

// tooCostly is the validation error of arguments too large for the schema.
type tooCostly struct{}

// KeywordPath implements jsonschema.ErrorKind.
func (*tooCostly) KeywordPath() []string { return []string{"$schema"} }

// LocalizedString implements jsonschema.ErrorKind.
func (*tooCostly) LocalizedString(*message.Printer) string {
	return "the arguments are too large to be checked against this tool's schema"
}

// analyse computes the static cost bound of sch: for each depth d of the
// arguments (0 to the protocol's nesting depth), an upper bound of the
// subschemas one value d levels deep is checked against. It refuses a
// schema over lim.MaxSubschemas or lim.MaxExpansion, and one that refers
// to itself without moving into the arguments (it could only loop).
func analyse(root *jsonschema.Schema, lim Limits) ([]int64, error) {
	g := graph{index: map[*jsonschema.Schema]int{}}
	if err := g.collect(root, lim.MaxSubschemas); err != nil {
		return nil, err
	}
	// In-place order: children before parents (refusing cycles).
	order, err := g.inplaceOrder()
	if err != nil {
		return nil, err
	}
	n := len(g.nodes)
	f := make([]int64, n)    // f_d: evaluations at depth d below where a node applies
	next := make([]int64, n) // f_{d+1}
	// f_0(s) = I(s): s and its in-place tree, with multiplicity.
	for _, i := range order {
		f[i] = 1
		for _, c := range g.inplace[i] {
			f[i] = sat(f[i], f[c])
		}
	}
	var out []int64
	for d := 0; ; d++ {
		if f[0] > lim.MaxExpansion {
			return nil, refused("checking one argument value against the schema could take over %d subschema checks (its $ref, allOf, anyOf or oneOf multiply); the limit is %d", lim.MaxExpansion, lim.MaxExpansion)
		}
		out = append(out, f[0])
		if d == lim.MaxDepth || f[0] == 0 {
			break
		}
		// g_d(u): the evaluations at one child of the value u applies to.
		for _, i := range order {
			var sum int64
			for _, c := range g.generic[i] {
				sum = sat(sum, f[c])
			}
			var best int64
			for _, cs := range g.labelled[i] {
				var s int64
				for _, c := range cs {
					s = sat(s, f[c])
				}
				best = max(best, s)
			}
			next[i] = sat(sum, best)
		}
		// f_{d+1}(s) = the sum of g_d over s's in-place tree.
		for _, i := range order {
			for _, c := range g.inplace[i] {
				next[i] = sat(next[i], next[c])
			}
		}
		f, next = next, f
		if d > 0 && f[0] <= out[len(out)-1] && stable(out) {
			// No growth with depth: the last figure bounds the rest.
			out = append(out, f[0])
			break
		}
	}
	// The last entry bounds every deeper value: make it the maximum.
	var m int64
	for _, x := range out {
		m = max(m, x)
	}
	out[len(out)-1] = m
	return out, nil
}

// stable reports whether the last figures stopped changing.
func stable(out []int64) bool {
	return len(out) >= 3 && out[len(out)-1] == out[len(out)-2] && out[len(out)-2] == out[len(out)-3]
}

// sat adds without overflow.
func sat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// graph is a compiled schema's subschemas: in-place edges (applied to the
// same value) and child edges (applied to a property or item), the latter
// split into edges for any child (generic) and edges for one property
// name or item index (labelled: a child meets one label at most).
type graph struct {
	index    map[*jsonschema.Schema]int
	nodes    []*jsonschema.Schema
	inplace  [][]int
	generic  [][]int
	labelled []map[string][]int
}

func (g *graph) id(s *jsonschema.Schema, queue *[]*jsonschema.Schema) int {
	if i, ok := g.index[s]; ok {
		return i
	}
	i := len(g.nodes)
	g.index[s] = i
	g.nodes = append(g.nodes, s)
	g.inplace = append(g.inplace, nil)
	g.generic = append(g.generic, nil)
	g.labelled = append(g.labelled, nil)
	*queue = append(*queue, s)
	return i
}

// collect walks every subschema reachable from root.
func (g *graph) collect(root *jsonschema.Schema, maxNodes int) error {
	var queue []*jsonschema.Schema
	g.id(root, &queue)
	var dynamic []int // nodes with a $dynamicRef or $recursiveRef
	for len(queue) > 0 {
		if len(g.nodes) > maxNodes {
			return refused("the schema has over %d subschemas", maxNodes)
		}
		s := queue[0]
		queue = queue[1:]
		i := g.index[s]
		in := func(c *jsonschema.Schema) {
			if c != nil {
				j := g.id(c, &queue)
				g.inplace[i] = append(g.inplace[i], j)
			}
		}
		gen := func(c *jsonschema.Schema) {
			if c != nil {
				j := g.id(c, &queue)
				g.generic[i] = append(g.generic[i], j)
			}
		}
		lab := func(label string, c *jsonschema.Schema) {
			if c != nil {
				j := g.id(c, &queue)
				if g.labelled[i] == nil {
					g.labelled[i] = map[string][]int{}
				}
				g.labelled[i][label] = append(g.labelled[i][label], j)
			}
		}
		in(s.Ref)
		in(s.RecursiveRef)
		if s.DynamicRef != nil {
			in(s.DynamicRef.Ref)
		}
		if s.RecursiveRef != nil || s.DynamicRef != nil {
			dynamic = append(dynamic, i)
		}
		in(s.Not)
		for _, c := range s.AllOf {
			in(c)
		}
		for _, c := range s.AnyOf {
			in(c)
		}
		for _, c := range s.OneOf {
			in(c)
		}
		in(s.If)
		in(s.Then)
		in(s.Else)
		for _, c := range s.DependentSchemas {
			in(c)
		}
		for _, v := range s.Dependencies {
			if c, ok := v.(*jsonschema.Schema); ok {
				in(c)
			}
		}
		for name, c := range s.Properties {
			lab("p:"+name, c)
		}
		for _, c := range s.PatternProperties {
			gen(c)
		}
		if c, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
			gen(c)
		}
		gen(s.PropertyNames)
		gen(s.UnevaluatedProperties)
		gen(s.Contains)
		switch it := s.Items.(type) {
		case *jsonschema.Schema:
			gen(it)
		case []*jsonschema.Schema:
			for k, c := range it {
				lab(fmt.Sprint("i:", k), c)
			}
		}
		if c, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
			gen(c)
		}
		for k, c := range s.PrefixItems {
			lab(fmt.Sprint("i:", k), c)
		}
		gen(s.Items2020)
		gen(s.UnevaluatedItems)
		gen(s.ContentSchema)
	}
	if len(g.nodes) > maxNodes {
		return refused("the schema has over %d subschemas", maxNodes)
	}
	// A dynamic reference may resolve to any subschema that declares an
	// anchor: count each as a possible target.
	for _, i := range dynamic {
		s := g.nodes[i]
		for j, t := range g.nodes {
			if (s.DynamicRef != nil && s.DynamicRef.Anchor != "" && t.DynamicAnchor == s.DynamicRef.Anchor) ||
				(s.RecursiveRef != nil && t.RecursiveAnchor) {
				g.inplace[i] = append(g.inplace[i], j)
			}
		}
	}
	return nil
}

// inplaceOrder returns the nodes with every in-place child before its
// parent, or refuses an in-place cycle.
func (g *graph) inplaceOrder() ([]int, error) {
	const (
		unseen = iota
		onStack
		done
	)
	state := make([]uint8, len(g.nodes))
	order := make([]int, 0, len(g.nodes))
	type frame struct{ node, next int }
	for start := range g.nodes {
		if state[start] != unseen {
			continue
		}
		stack := []frame{{start, 0}}
		state[start] = onStack
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next < len(g.inplace[top.node]) {
				c := g.inplace[top.node][top.next]
				top.next++
				switch state[c] {
				case onStack:
					return nil, refused("the schema refers to itself without moving into a property or item (a $ref loop checks the same value forever)")
				case unseen:
					state[c] = onStack
					stack = append(stack, frame{c, 0})
				}
				continue
			}
			state[top.node] = done
			order = append(order, top.node)
			stack = stack[:len(stack)-1]
		}
	}
	return order, nil
}
