package mcpbridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/protocol"
)

// intentTools are the MCP tools of the intents: one compact tool each,
// whose facts argument lists the predicates the intent reads with their
// argument names (the facts profile's), required ones starred. Facts are
// written as arrays [predicate, arg, ...] (the fact objects of Spec 03 are
// accepted too). A predicate is spelled out with its argument names in the
// first tool (in the order hosts list tools, by name) that reads it; a
// later tool refers to that one ("previewed as in edit") when the
// reference is shorter, since the model sees the whole list. Every token
// here is paid on every turn: the schema is the smallest that still says
// what to send (an array of arrays, described).
func intentTools(intents []protocol.IntentDecl, profile *protocol.FactsProfile) map[string]*mcp.Tool {
	sorted := slices.Clone(intents)
	slices.SortFunc(sorted, func(a, b protocol.IntentDecl) int { return strings.Compare(toolName(a.Name), toolName(b.Name)) })
	firstIn := map[string]string{} // predicate -> the tool that spells it out
	out := make(map[string]*mcp.Tool, len(sorted))
	for _, in := range sorted {
		name := toolName(in.Name)
		preds := intentPredicates(in, profile)
		var own []string
		refs := map[string][]string{} // tool -> predicates spelled out there
		var order []string
		for i, pred := range preds {
			star := ""
			if i < len(in.RequiredFacts) {
				star = "*"
			}
			s := `["` + pred + `",...]`
			if p := profile.Predicate(pred); p != nil {
				s = signature(p)
			}
			if where, ok := firstIn[pred]; ok && star == "" && len(pred)+len(" as in ")+len(where) < len(s) {
				if refs[where] == nil {
					order = append(order, where)
				}
				refs[where] = append(refs[where], pred)
				continue
			}
			if _, ok := firstIn[pred]; !ok {
				firstIn[pred] = name
			}
			own = append(own, s+star)
		}
		parts := own
		for _, where := range order {
			parts = append(parts, strings.Join(refs[where], ", ")+" as in "+where)
		}
		out[in.Name] = &mcp.Tool{
			Name:        name,
			Description: strings.TrimSpace(in.Description),
			InputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"facts": map[string]any{
						"type":        "array",
						"description": strings.Join(parts, "; "),
					},
				},
			},
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
		}
	}
	return out
}

// intentPredicates are the predicates an intent reads, required ones
// first; an intent that declares none reads every input predicate of the
// profile.
func intentPredicates(in protocol.IntentDecl, profile *protocol.FactsProfile) []string {
	preds := append(append([]string(nil), in.RequiredFacts...), in.OptionalFacts...)
	if len(preds) == 0 {
		for _, p := range profile.Predicates {
			if p.Direction != protocol.DirectionOutput {
				preds = append(preds, p.Predicate)
			}
		}
	}
	return preds
}

// singleIntentTool is the one intent tool of IntentToolsSingle: its
// description names each intent with its purpose on one line ("name:
// purpose", and the facts it requires: "(needs url)"); intent is an enum of
// the intents; facts lists the predicates of every intent, each spelled
// once, as the per-intent tools write them.
func singleIntentTool(intents []protocol.IntentDecl, profile *protocol.FactsProfile) *mcp.Tool {
	sorted := slices.Clone(intents)
	slices.SortFunc(sorted, func(a, b protocol.IntentDecl) int { return strings.Compare(a.Name, b.Name) })
	lines := []string{"Evaluate an intent with facts:"}
	names := make([]any, 0, len(sorted))
	var preds []string
	for _, in := range sorted {
		names = append(names, in.Name)
		line := in.Name + ": " + oneLine(in.Description)
		if len(in.RequiredFacts) > 0 {
			line += " (needs " + strings.Join(in.RequiredFacts, ", ") + ")"
		}
		lines = append(lines, line)
		for _, p := range intentPredicates(in, profile) {
			if !slices.Contains(preds, p) {
				preds = append(preds, p)
			}
		}
	}
	parts := make([]string, 0, len(preds))
	for _, pred := range preds {
		s := `["` + pred + `",...]`
		if p := profile.Predicate(pred); p != nil {
			s = signature(p)
		}
		parts = append(parts, s)
	}
	return &mcp.Tool{
		Name:        IntentToolName,
		Description: strings.Join(lines, "\n"),
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"intent": map[string]any{"enum": names},
				"facts": map[string]any{
					"type":        "array",
					"description": strings.Join(parts, "; "),
				},
			},
			"required": []string{"intent"},
		},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	}
}

// oneLine is s with its runs of white space (new lines) made one space.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// signature writes a predicate as name(arg,arg,...) with the argument
// names of the profile (the facts profile's types are checked by the
// server, which names the offending argument when one is wrong).
func signature(p *protocol.PredicateSchema) string {
	args := make([]string, p.Arity)
	for i := range args {
		args[i] = fmt.Sprintf("arg%d", i)
		if i < len(p.ArgNames) && p.ArgNames[i] != "" {
			args[i] = p.ArgNames[i]
		}
	}
	return `["` + p.Predicate + `",` + strings.Join(args, ",") + "]"
}

// intentArgs are the arguments of an intent tool.
type intentArgs struct {
	Intent  string            `json:"intent"` // only the single intent tool's
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
	if t, ok := s["type"]; ok && t != "object" {
		return map[string]any{"type": "object"}
	}
	out := make(map[string]any, len(s)+1)
	for k, v := range s {
		out[k] = v
	}
	out["type"] = "object"
	if out["$schema"] == draft202012 {
		// MCP's default dialect: saying so costs the model 15 tokens a tool.
		delete(out, "$schema")
	}
	if out["additionalProperties"] == false {
		// The server rejects unknown arguments itself (naming them).
		delete(out, "additionalProperties")
	}
	if props, ok := out["properties"].(map[string]any); ok {
		out["properties"] = enumsWithoutType(props)
	}
	return out
}

// enumsWithoutType drops "type": "string" from properties whose enum
// lists only strings: the enum says it already (JSON Schema), and the
// model pays for it every turn. Other properties are kept as they are.
func enumsWithoutType(props map[string]any) map[string]any {
	out := make(map[string]any, len(props))
	for k, v := range props {
		out[k] = v
		p, ok := v.(map[string]any)
		if !ok || p["type"] != "string" {
			continue
		}
		enum, ok := p["enum"].([]any)
		if !ok || len(enum) == 0 {
			continue
		}
		strs := true
		for _, e := range enum {
			if _, ok := e.(string); !ok {
				strs = false
				break
			}
		}
		if !strs {
			continue
		}
		q := make(map[string]any, len(p))
		for pk, pv := range p {
			if pk != "type" {
				q[pk] = pv
			}
		}
		out[k] = q
	}
	return out
}

// draft202012 is the JSON Schema dialect MCP assumes when a schema names
// none (MCP 2025-11-25 and later).
const draft202012 = "https://json-schema.org/draft/2020-12/schema"

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
	return protocol.ClipN(s, n)
}

func ptr[T any](v T) *T { return &v }
