package inspector

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/manglecp/manglecp/protocol"
)

// This file turns protocol values into what the page draws: forms for the
// facts profile and for input schemas, macro-tool cards grouped by
// disclosure level, proof trees, the rule coverage heat map and error
// envelopes with their registry entries. The page only renders; decisions
// are made and tested here.

// PredicateForm is the facts editor's form for one predicate of the facts
// profile.
type PredicateForm struct {
	Predicate   string     `json:"predicate"`
	Description string     `json:"description,omitempty"`
	Direction   string     `json:"direction"`
	Temporal    bool       `json:"temporal"`
	Args        []ArgField `json:"args"`
	// Input reports whether a client may send facts of the predicate
	// (direction input or both).
	Input bool `json:"input"`
	// RequiredBy and OptionalFor name the intents that list the predicate.
	RequiredBy  []string `json:"required_by,omitempty"`
	OptionalFor []string `json:"optional_for,omitempty"`
}

// ArgField is one argument of a predicate form.
type ArgField struct {
	Name string `json:"name"`
	// Type is string, number, boolean or any (Spec 03 section 8.1).
	Type string `json:"type"`
}

// predicateForms shapes the facts profile: one form per predicate, sorted
// by name, arguments named arg1, arg2, ... where the profile names none.
func predicateForms(m *protocol.Manifest) []PredicateForm {
	if m == nil {
		return nil
	}
	required, optional := map[string][]string{}, map[string][]string{}
	for _, in := range m.Intents {
		for _, p := range in.RequiredFacts {
			required[p] = append(required[p], in.Name)
		}
		for _, p := range in.OptionalFacts {
			optional[p] = append(optional[p], in.Name)
		}
	}
	out := make([]PredicateForm, 0, len(m.FactsProfile.Predicates))
	for _, p := range m.FactsProfile.Predicates {
		dir := p.Direction
		if dir == "" {
			dir = protocol.DirectionInput
		}
		f := PredicateForm{
			Predicate:   p.Predicate,
			Description: p.Description,
			Direction:   dir,
			Temporal:    p.Temporal,
			Input:       dir != protocol.DirectionOutput,
			RequiredBy:  required[p.Predicate],
			OptionalFor: optional[p.Predicate],
			Args:        make([]ArgField, max(p.Arity, 0)),
		}
		for i := range f.Args {
			f.Args[i] = ArgField{Name: "arg" + strconv.Itoa(i+1), Type: protocol.ArgAny}
			if i < len(p.ArgNames) && p.ArgNames[i] != "" {
				f.Args[i].Name = p.ArgNames[i]
			}
			if i < len(p.ArgTypes) && p.ArgTypes[i] != "" {
				f.Args[i].Type = p.ArgTypes[i]
			}
		}
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Predicate < out[j].Predicate })
	return out
}

// FormField is one input of the invoke form generated from a macro-tool's
// input_schema.
type FormField struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required"`
	Enum        []any  `json:"enum,omitempty"`
	Default     any    `json:"default,omitempty"`
	// Widget is how the page asks for the value: "select" (an enum),
	// "checkbox" (boolean), "number" (number or integer), "text" (string)
	// or "json" (anything else, typed as JSON).
	Widget string `json:"widget"`
}

// formFields generates the invoke form of an input schema: one field per
// property, required ones first, then by name. Schemas without properties
// give no fields (the page then offers a raw JSON editor only).
func formFields(schema map[string]any) []FormField {
	props, _ := schema["properties"].(map[string]any)
	req := map[string]bool{}
	if list, ok := schema["required"].([]any); ok {
		for _, r := range list {
			if s, ok := r.(string); ok {
				req[s] = true
			}
		}
	}
	out := make([]FormField, 0, len(props))
	for name, raw := range props {
		p, _ := raw.(map[string]any)
		f := FormField{Name: name, Required: req[name], Type: schemaType(p)}
		if p != nil {
			f.Description, _ = p["description"].(string)
			f.Default = p["default"]
			if e, ok := p["enum"].([]any); ok {
				f.Enum = e
			} else if c, ok := p["const"]; ok {
				f.Enum = []any{c}
			}
		}
		switch {
		case len(f.Enum) > 0:
			f.Widget = "select"
		case f.Type == "boolean":
			f.Widget = "checkbox"
		case f.Type == "number" || f.Type == "integer":
			f.Widget = "number"
		case f.Type == "string":
			f.Widget = "text"
		default:
			f.Widget = "json"
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Required != out[j].Required {
			return out[i].Required
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// schemaType is the JSON Schema type of a property: its "type", the first
// non-null one of a type list, or "any".
func schemaType(p map[string]any) string {
	switch t := p["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok && s != "null" {
				return s
			}
		}
	}
	return "any"
}

// ToolCard is a macro-tool as the page shows it: the tool as the server
// sent it plus what the page needs to draw its card and its invoke form.
type ToolCard struct {
	Tool protocol.MacroTool `json:"tool"`
	// Fields is the invoke form generated from input_schema.
	Fields []FormField `json:"fields"`
	// NeedsConfirmation: the tool's safety metadata asks for the user's
	// confirmation, so invoking shows the confirmation step first.
	NeedsConfirmation bool `json:"needs_confirmation"`
	// HasProof: the response holds a derivation for this macro_id.
	HasProof bool `json:"has_proof"`
}

// DisclosureGroup holds the cards of one disclosure level.
type DisclosureGroup struct {
	Level string     `json:"level"`
	Cards []ToolCard `json:"cards"`
}

// disclosureOrder is the order of the groups: the most detailed first.
var disclosureOrder = []string{protocol.DisclosureFull, protocol.DisclosureCondensed, protocol.DisclosureMinimal}

// toolGroups sorts the macro-tools into disclosure groups (full, condensed,
// minimal, then any other level by name), keeping the server's order
// within a group. Empty levels are left out.
func toolGroups(resp *protocol.IntentResponse) []DisclosureGroup {
	proofs := map[string]bool{}
	if resp.ProofHints != nil {
		for _, d := range resp.ProofHints.Derivations {
			proofs[d.MacroID] = true
		}
	}
	byLevel := map[string][]ToolCard{}
	for _, m := range resp.MacroTools {
		level := m.DisclosureLevel
		if level == "" {
			level = "unspecified"
		}
		byLevel[level] = append(byLevel[level], ToolCard{
			Tool:              m,
			Fields:            formFields(m.InputSchema),
			NeedsConfirmation: m.Safety != nil && m.Safety.RequiresUserConfirmation,
			HasProof:          proofs[m.MacroID],
		})
	}
	var out []DisclosureGroup
	for _, l := range disclosureOrder {
		if cards, ok := byLevel[l]; ok {
			out = append(out, DisclosureGroup{Level: l, Cards: cards})
			delete(byLevel, l)
		}
	}
	rest := make([]string, 0, len(byLevel))
	for l := range byLevel {
		rest = append(rest, l)
	}
	sort.Strings(rest)
	for _, l := range rest {
		out = append(out, DisclosureGroup{Level: l, Cards: byLevel[l]})
	}
	return out
}

// ProofView is the proof of one macro-tool as a tree: rules at the inner
// nodes, facts at the leaves.
type ProofView struct {
	MacroID         string          `json:"macro_id"`
	Tool            string          `json:"tool"`
	SelectedBy      string          `json:"selected_by"`
	Score           int64           `json:"score"`
	RuleChain       []string        `json:"rule_chain"`
	SupportingFacts []protocol.Fact `json:"supporting_facts"`
	Root            *TreeNode       `json:"root"`
	// Synthesized: the server sent no tree, so it was built from the rule
	// chain and the supporting facts.
	Synthesized bool `json:"synthesized,omitempty"`
	// Truncated: the tree had more than maxProofNodes nodes.
	Truncated bool      `json:"truncated,omitempty"`
	Stats     TreeStats `json:"stats"`
}

// TreeStats count a proof tree's nodes.
type TreeStats struct {
	Nodes int `json:"nodes"`
	Rules int `json:"rules"`
	Facts int `json:"facts"`
	// Absent counts negated premises (facts that had to be missing).
	Absent int `json:"absent"`
	// Shared counts subtrees drawn once and referenced again.
	Shared int `json:"shared"`
	Depth  int `json:"depth"`
}

// TreeNode is one node of a proof tree.
type TreeNode struct {
	// ID numbers the nodes in drawing order, from 1.
	ID int `json:"id"`
	// Fact is the node's fact as the server wrote it.
	Fact string `json:"fact"`
	// Pred is the fact's predicate (without the "!" of a negated premise).
	Pred string `json:"pred"`
	// Kind is "rule" (a derived fact: the rule that derived it),
	// "fact" (a server or session fact), or "absent" (a negated premise).
	Kind string `json:"kind"`
	// Type is the server's node type: server, session, derived or absent.
	Type     string      `json:"type"`
	Children []*TreeNode `json:"children,omitempty"`
	// Ref, when set, is the ID of the node where the same derivation is
	// drawn in full; this node's children are left out.
	Ref int `json:"ref,omitempty"`
}

// maxProofNodes bounds the nodes of one drawn proof tree.
const maxProofNodes = 2000

// proofViews shapes every derivation of resp, keyed by macro_id.
func proofViews(resp *protocol.IntentResponse) map[string]*ProofView {
	out := map[string]*ProofView{}
	if resp.ProofHints == nil {
		return out
	}
	names := map[string]string{}
	for _, m := range resp.MacroTools {
		names[m.MacroID] = m.Name
	}
	for _, d := range resp.ProofHints.Derivations {
		out[d.MacroID] = proofView(d, names[d.MacroID])
	}
	return out
}

// proofView shapes one derivation. Repeated subtrees (the same fact of the
// same type derived again under another premise) are drawn once; later
// occurrences refer to the first, which keeps large proofs readable.
func proofView(d protocol.Derivation, tool string) *ProofView {
	v := &ProofView{
		MacroID: d.MacroID, Tool: tool, SelectedBy: d.SelectedBy, Score: d.Score,
		RuleChain: d.RuleChain, SupportingFacts: d.SupportingFacts,
	}
	if v.RuleChain == nil {
		v.RuleChain = []string{}
	}
	if v.SupportingFacts == nil {
		v.SupportingFacts = []protocol.Fact{}
	}
	src := d.Tree
	if src == nil {
		src = synthesizeTree(d)
		v.Synthesized = true
	}
	b := &treeBuilder{seen: map[string]int{}}
	v.Root = b.build(src, 1)
	v.Stats, v.Truncated = b.stats, b.truncated
	return v
}

// synthesizeTree builds a tree from a derivation without one: the rule
// chain as nested rule nodes, the supporting facts as leaves of the last.
func synthesizeTree(d protocol.Derivation) *protocol.ProofNode {
	root := &protocol.ProofNode{Fact: d.SelectedBy, Type: "derived"}
	if root.Fact == "" {
		root.Fact = "selected"
	}
	cur := root
	for _, r := range d.RuleChain {
		n := &protocol.ProofNode{Fact: r, Type: "derived"}
		cur.Children = append(cur.Children, n)
		cur = n
	}
	for _, f := range d.SupportingFacts {
		typ := f.Category
		if typ == "" {
			typ = protocol.CategorySession
		}
		cur.Children = append(cur.Children, &protocol.ProofNode{Fact: factText(f), Type: typ})
	}
	return root
}

type treeBuilder struct {
	next      int
	seen      map[string]int
	stats     TreeStats
	truncated bool
}

func (b *treeBuilder) build(n *protocol.ProofNode, depth int) *TreeNode {
	if n == nil {
		return nil
	}
	if b.next >= maxProofNodes {
		b.truncated = true
		return nil
	}
	b.next++
	t := &TreeNode{ID: b.next, Fact: n.Fact, Type: n.Type, Pred: predOf(n.Fact)}
	b.stats.Nodes++
	b.stats.Depth = max(b.stats.Depth, depth)
	switch {
	case n.Type == "absent" || strings.HasPrefix(n.Fact, "!"):
		t.Kind = "absent"
		b.stats.Absent++
	case n.Type == "derived":
		t.Kind = "rule"
		b.stats.Rules++
	default:
		t.Kind = "fact"
		b.stats.Facts++
	}
	if len(n.Children) == 0 {
		return t
	}
	key := n.Type + "\x00" + n.Fact
	if id, ok := b.seen[key]; ok {
		t.Ref = id
		b.stats.Shared++
		return t
	}
	b.seen[key] = t.ID
	for _, c := range n.Children {
		if ct := b.build(c, depth+1); ct != nil {
			t.Children = append(t.Children, ct)
		}
	}
	return t
}

// predOf is the predicate of a fact written as pred(args) or !pred(args).
func predOf(fact string) string {
	s := strings.TrimPrefix(strings.TrimSpace(fact), "!")
	if i := strings.IndexByte(s, '('); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// factText writes a fact as pred(arg, ...) with JSON arguments.
func factText(f protocol.Fact) string {
	var b strings.Builder
	b.WriteString(f.Pred)
	b.WriteString("(")
	if f.Args == nil && f.NamedArgs != nil {
		raw, _ := json.Marshal(f.NamedArgs)
		b.Write(raw)
	}
	for i, a := range f.Args {
		if i > 0 {
			b.WriteString(",")
		}
		raw, err := json.Marshal(a)
		if err != nil {
			raw = []byte("?")
		}
		b.Write(raw)
	}
	b.WriteString(")")
	return b.String()
}

// CoverageView is rule coverage (Spec 09 section 6) as a heat map: the
// rules grouped by the predicate they define.
type CoverageView struct {
	Total        int `json:"total"`
	Fired        int `json:"fired"`
	Dormant      int `json:"dormant"`
	Inapplicable int `json:"inapplicable"`
	// FiredPercent is Fired of Total, rounded down.
	FiredPercent int `json:"fired_percent"`
	// Rows are the heat map's rows, one per head predicate, sorted by name.
	Rows []CoverageRow `json:"rows"`
	// FiredUnnamed counts fired rules the server did not name and no proof
	// showed (coverage lists dormant rules by name, fired ones by count).
	FiredUnnamed int `json:"fired_unnamed"`
}

// CoverageRow is one head predicate's rules.
type CoverageRow struct {
	Head  string         `json:"head"`
	Cells []CoverageCell `json:"cells"`
}

// CoverageCell is one rule of the heat map.
type CoverageCell struct {
	// Rule is the rule's name as the server reports it (head#n), or the
	// head predicate for a rule seen firing in a proof.
	Rule string `json:"rule"`
	// Status is "fired", "partially_alive", "dead" or "inapplicable".
	Status  string   `json:"status"`
	Missing []string `json:"missing,omitempty"`
}

// coverageView shapes a response's rule coverage, or returns nil when it
// has none. Rules that derived a node of any proof tree count as fired
// cells of their head predicate.
func coverageView(resp *protocol.IntentResponse) *CoverageView {
	if resp.Diagnostics == nil || resp.Diagnostics.RuleCoverage == nil {
		return nil
	}
	rc := resp.Diagnostics.RuleCoverage
	v := &CoverageView{Total: rc.TotalRules, Fired: rc.RulesFired, Dormant: rc.RulesDormant, Inapplicable: rc.RulesInapplicable}
	if v.Total > 0 {
		v.FiredPercent = v.Fired * 100 / v.Total
	}
	rows := map[string]*CoverageRow{}
	row := func(head string) *CoverageRow {
		r, ok := rows[head]
		if !ok {
			r = &CoverageRow{Head: head}
			rows[head] = r
		}
		return r
	}
	for _, d := range rc.DormantDetails {
		head, _, _ := strings.Cut(d.Rule, "#")
		row(head).Cells = append(row(head).Cells, CoverageCell{Rule: d.Rule, Status: d.Status, Missing: d.MissingPredicates})
	}
	fired := map[string]bool{}
	if resp.ProofHints != nil {
		for _, d := range resp.ProofHints.Derivations {
			if d.Tree != nil {
				collectDerived(d.Tree, fired)
			}
		}
	}
	heads := make([]string, 0, len(fired))
	for h := range fired {
		heads = append(heads, h)
	}
	sort.Strings(heads)
	for _, h := range heads {
		row(h).Cells = append(row(h).Cells, CoverageCell{Rule: h, Status: "fired"})
	}
	v.FiredUnnamed = max(v.Fired-len(heads), 0)
	v.Rows = make([]CoverageRow, 0, len(rows))
	for _, r := range rows {
		v.Rows = append(v.Rows, *r)
	}
	sort.Slice(v.Rows, func(i, j int) bool { return v.Rows[i].Head < v.Rows[j].Head })
	return v
}

// collectDerived adds the predicates of the derived nodes of a tree.
func collectDerived(n *protocol.ProofNode, out map[string]bool) {
	if n.Type == "derived" && len(n.Children) > 0 {
		out[predOf(n.Fact)] = true
	}
	for _, c := range n.Children {
		collectDerived(c, out)
	}
}

// ErrorView is an error answer as the page renders it: the envelope the
// server sent, its status, and the registry's entry for its code.
type ErrorView struct {
	// Envelope is the error envelope (Spec 09 section 2).
	Envelope *protocol.Envelope `json:"envelope"`
	// Error is the envelope's payload.
	Error *protocol.Error `json:"error"`
	// Status is the HTTP status of the answer (the registry's over session
	// transports).
	Status int `json:"status"`
	// Registry is the code's registry entry; nil for custom (x-) codes.
	Registry *RegistryEntry `json:"registry,omitempty"`
	// RequestID is the id of the request the error answered.
	RequestID string `json:"request_id,omitempty"`
	// Attempts is how many times the client sent the request.
	Attempts int `json:"attempts,omitempty"`
	// Local: the client found the error itself and sent nothing.
	Local bool `json:"local,omitempty"`
	// Transport: the failure is below the protocol (unreachable server or
	// a reply that is not MangleCP); the code is x-transport_error.
	Transport bool `json:"transport,omitempty"`
}

// RegistryEntry is one code of the error registry (Spec 09 section 3).
type RegistryEntry struct {
	Code        protocol.Code `json:"code"`
	Category    string        `json:"category"`
	HTTPStatus  int           `json:"http_status"`
	Recoverable bool          `json:"recoverable"`
	Description string        `json:"description"`
}

// registryEntry looks a code up in the registry.
func registryEntry(c protocol.Code) *RegistryEntry {
	info, ok := protocol.Lookup(c)
	if !ok {
		return nil
	}
	return &RegistryEntry{Code: info.Code, Category: info.Category, HTTPStatus: info.HTTPStatus, Recoverable: info.Recoverable, Description: info.Description}
}

// registry lists every code of the error registry.
func registry() []RegistryEntry {
	codes := protocol.Codes()
	out := make([]RegistryEntry, len(codes))
	for i, info := range codes {
		out[i] = RegistryEntry{Code: info.Code, Category: info.Category, HTTPStatus: info.HTTPStatus, Recoverable: info.Recoverable, Description: info.Description}
	}
	return out
}

// errorView shapes a server's error answer.
func errorView(payload *protocol.Error, status int, requestID string, attempts int, local bool) *ErrorView {
	env := &protocol.Envelope{Type: protocol.TypeError, Version: protocol.Version}
	if requestID != "" {
		id := requestID
		env.ID = &id
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		raw = []byte(`{"code":"` + string(payload.Code) + `"}`)
	}
	env.Payload = raw
	if status == 0 {
		status = payload.Code.HTTPStatus()
	}
	return &ErrorView{
		Envelope: env, Error: payload, Status: status, Registry: registryEntry(payload.Code),
		RequestID: requestID, Attempts: attempts, Local: local,
	}
}
