package mcpbridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/protocol"
)

// intentTool is the MCP tool of one intent: a compact schema derived from
// the facts profile. Facts are written as arrays [predicate, arg, ...]
// (the fact objects of Spec 03 are accepted too); the description names
// each predicate the intent reads with its argument names, so the model
// needs no other documentation.
func intentTool(in protocol.IntentDecl, profile *protocol.FactsProfile) *mcp.Tool {
	var sig []string
	preds := append(append([]string(nil), in.RequiredFacts...), in.OptionalFacts...)
	if len(preds) == 0 {
		for _, p := range profile.Predicates {
			if p.Direction != protocol.DirectionOutput {
				preds = append(preds, p.Predicate)
			}
		}
	}
	for i, name := range preds {
		s := name
		if p := profile.Predicate(name); p != nil {
			s = signature(p)
		}
		if i < len(in.RequiredFacts) {
			s += " (required)"
		}
		sig = append(sig, s)
	}
	desc := strings.TrimSpace(in.Description)
	if desc != "" && !strings.HasSuffix(desc, ".") {
		desc += "."
	}
	desc += " Returns the tools the server's rules select for these facts; they are added to your tools."
	factsDesc := "Facts, each [predicate, args...]"
	if len(sig) > 0 {
		factsDesc += ": " + strings.Join(sig, "; ")
	}
	return &mcp.Tool{
		Name:        toolName(in.Name),
		Description: desc,
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"facts": map[string]any{
					"type":        "array",
					"description": factsDesc,
					"items":       map[string]any{"type": "array"},
				},
				"explain": map[string]any{"type": "boolean", "description": "include proof hints"},
			},
			"required": []string{"facts"},
		},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
	}
}

// signature writes a predicate as name(arg, arg:type, ...): string
// arguments without their type.
func signature(p *protocol.PredicateSchema) string {
	args := make([]string, p.Arity)
	for i := range args {
		name := fmt.Sprintf("arg%d", i)
		if i < len(p.ArgNames) && p.ArgNames[i] != "" {
			name = p.ArgNames[i]
		}
		if i < len(p.ArgTypes) && p.ArgTypes[i] != protocol.ArgString {
			name += ":" + p.ArgTypes[i]
		}
		args[i] = name
	}
	return p.Predicate + "(" + strings.Join(args, ",") + ")"
}

// intentArgs are the arguments of an intent tool.
type intentArgs struct {
	Facts   []json.RawMessage `json:"facts"`
	Params  map[string]any    `json:"params"`
	Explain bool              `json:"explain"`
}

// parseIntentArgs decodes an intent tool's arguments. Facts are arrays
// [predicate, arg, ...] or Spec 03 fact objects; numbers stay exact
// (json.Number).
func parseIntentArgs(raw json.RawMessage) (*intentArgs, []protocol.Fact, *protocol.Error) {
	var a intentArgs
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&a); err != nil {
			return nil, nil, protocol.Errorf(CodeInvalidArguments, "the arguments are not an object with a facts list").
				WithDetails(&protocol.ErrorDetails{Suggestion: `{"facts": [["current_url", "https://example.com"]]}`})
		}
	}
	facts := make([]protocol.Fact, 0, len(a.Facts))
	for i, r := range a.Facts {
		f, err := parseFact(r)
		if err != "" {
			return nil, nil, protocol.Errorf(CodeInvalidArguments, "facts[%d]: %s", i, err).
				WithDetails(&protocol.ErrorDetails{Field: fmt.Sprintf("facts[%d]", i), Suggestion: `write a fact as ["predicate", arg1, arg2]`})
		}
		facts = append(facts, f)
	}
	return &a, facts, nil
}

// parseFact reads one fact; the error is a short description without the
// input.
func parseFact(raw json.RawMessage) (protocol.Fact, string) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) > 0 && raw[0] == '[':
		var arr []any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&arr); err != nil {
			return protocol.Fact{}, "not a JSON array"
		}
		if len(arr) == 0 {
			return protocol.Fact{}, "an empty array: the first element is the predicate"
		}
		pred, ok := arr[0].(string)
		if !ok {
			return protocol.Fact{}, "the first element (the predicate) is not a string"
		}
		args := arr[1:]
		if args == nil {
			args = []any{}
		}
		return protocol.Fact{Pred: pred, Args: args}, ""
	case len(raw) > 0 && raw[0] == '{':
		var f protocol.Fact
		if err := json.Unmarshal(raw, &f); err != nil {
			return protocol.Fact{}, "not a fact object {pred, args}"
		}
		return f, ""
	}
	return protocol.Fact{}, "neither an array [predicate, args...] nor a fact object"
}

// macroToolDef is the MCP tool of a macro-tool: its name, its description
// and input_schema at the disclosure level the server chose, and
// annotations from its safety block.
func macroToolDef(name string, t *protocol.MacroTool) *mcp.Tool {
	return &mcp.Tool{
		Name:        name,
		Description: t.Description,
		InputSchema: objectSchema(t.InputSchema),
		Annotations: annotations(t.Safety),
	}
}

// objectSchema returns an MCP input schema for a macro-tool's
// input_schema: MCP requires type "object". A schema of another type, or
// none (condensed and minimal disclosure), accepts any object; the server
// validates the arguments either way.
func objectSchema(s map[string]any) map[string]any {
	if len(s) == 0 {
		return map[string]any{"type": "object"}
	}
	switch s["type"] {
	case "object":
		return s
	case nil:
		out := make(map[string]any, len(s)+1)
		for k, v := range s {
			out[k] = v
		}
		out["type"] = "object"
		return out
	}
	return map[string]any{"type": "object"}
}

// annotations maps a macro-tool's safety block to MCP tool annotations.
// A tool without a safety block (condensed or minimal disclosure) gets
// none: hosts then assume the worst, which is right.
func annotations(s *protocol.Safety) *mcp.ToolAnnotations {
	if s == nil {
		return nil
	}
	effects := slices.DeleteFunc(slices.Clone(s.SideEffects), func(e string) bool { return e == "none" })
	readOnly := len(effects) == 0
	a := &mcp.ToolAnnotations{ReadOnlyHint: readOnly, IdempotentHint: s.Idempotent || readOnly}
	if !readOnly {
		a.DestructiveHint = ptr(!s.Reversible || slices.Contains(effects, "destructive"))
	}
	open := false
	for _, e := range effects {
		switch e {
		case "network", "browser", "payments", "authentication", "database":
			open = true
		}
	}
	a.OpenWorldHint = ptr(open)
	return a
}

// toolName makes a valid MCP tool name (letters, digits, _ - . ; at most
// 64 characters) from a MangleCP name.
func toolName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 64 {
			break
		}
	}
	if b.Len() == 0 {
		return "tool"
	}
	return b.String()
}

// bounded shortens s to at most n bytes (on a rune boundary) for echoing
// input or server text back.
func bounded(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func ptr[T any](v T) *T { return &v }
