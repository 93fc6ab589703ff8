package gateway

import (
	"fmt"
	"sort"
	"strings"

	"github.com/manglecp/manglecp/upstream"
)

// Composed tools: macro-tools the gateway builds from an upstream's own
// tools, run server side, so that a model asks once for what the
// upstream would answer in many calls (a search that answers the matching
// lines instead of whole files; a replace across files previewed as one
// diff and applied after one consent; a move that makes the destination's
// directory). Go holds how each is done (compose_*.go); the rules hold
// everything else (rules/domain/composed.mg: their parameters, side
// effects, confirmation and grants, derived from the upstream tools they
// call; a pack: which intent offers them).
//
// A composed tool exists for an upstream that lists every tool of its
// roles with the shape it needs (a tool of that name taking those
// parameters): the filesystem server's shapes, whatever the server is
// called. The catalogue then writes
//
//	upstream_macro(U, Tool, Kind).    Tool (named U_Kind) is composed of U's tools
//	macro_uses(Tool, UpstreamTool).   it calls UpstreamTool (one fact per role)
//
// and the rules declare Tool.

// A role is one upstream tool a composed tool calls: its name upstream
// and the parameters it must take (a parameter "edits" must be an array
// of {oldText, newText} objects).
type role struct {
	tool   string
	params []string
}

// Roles of the filesystem server's shapes.
var (
	roleList  = role{"search_files", []string{"path", "pattern"}}
	roleRead  = role{"read_text_file", []string{"path"}}
	roleEdit  = role{"edit_file", []string{"path", "edits"}}
	roleMkdir = role{"create_directory", []string{"path"}}
	roleMove  = role{"move_file", []string{"source", "destination"}}
)

// Kinds of composed tools, and the roles each needs.
const (
	kindSearch  = "search_text"
	kindReplace = "replace"
	kindApply   = "apply_edits"
	kindMove    = "move"
)

var composedKinds = map[string][]role{
	kindSearch:  {roleList, roleRead},
	kindReplace: {roleList, roleRead},
	kindApply:   {roleRead, roleEdit},
	kindMove:    {roleMkdir, roleMove},
}

// composed is one composed tool of an upstream.
type composed struct {
	name  string            // the MangleCP tool name (U_kind)
	kind  string            // a key of composedKinds
	roles map[string]*entry // upstream tool name -> its entry
}

// compose finds the composed tools an upstream's catalogue allows and
// writes their facts; skipped says which were left out and why (a name
// the upstream already uses).
func compose(up string, entries map[string]*entry) (macros map[string]*composed, facts string, skipped []string) {
	byName := map[string]*entry{}
	for _, e := range entries {
		byName[e.original] = e
	}
	macros = map[string]*composed{}
	var b strings.Builder
	kinds := make([]string, 0, len(composedKinds))
	for k := range composedKinds {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, kind := range kinds {
		c := &composed{name: toolName(up, kind), kind: kind, roles: map[string]*entry{}}
		for _, r := range composedKinds[kind] {
			e := byName[r.tool]
			if e == nil || !takes(e, r) {
				c = nil
				break
			}
			c.roles[r.tool] = e
		}
		if c == nil {
			continue
		}
		if _, taken := entries[c.name]; taken {
			skipped = append(skipped, fmt.Sprintf("composed %s: the upstream has a tool of that name", c.name))
			continue
		}
		macros[c.name] = c
		q := mgString(c.name)
		fmt.Fprintf(&b, "\nupstream_macro(%s, %s, %s).\n", mgString(up), q, mgString(kind))
		names := make([]string, 0, len(c.roles))
		for _, e := range c.roles {
			names = append(names, e.name)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(&b, "macro_uses(%s, %s).\n", q, mgString(n))
		}
	}
	return macros, b.String(), skipped
}

// takes reports whether an upstream tool takes the parameters of a role.
func takes(e *entry, r role) bool {
	props, _ := e.tool.InputSchema["properties"].(map[string]any)
	for _, p := range r.params {
		s, ok := props[p].(map[string]any)
		if !ok {
			return false
		}
		if p == "edits" && !editItems(s) {
			return false
		}
	}
	return true
}

// editItems reports whether a parameter schema is an array of objects
// with oldText and newText.
func editItems(s map[string]any) bool {
	items, _ := s["items"].(map[string]any)
	props, _ := items["properties"].(map[string]any)
	return props["oldText"] != nil && props["newText"] != nil
}

// upstreamName is an upstream tool's name, bounded, for messages.
func upstreamName(e *entry) string { return upstream.Truncate(e.original, 64) }
