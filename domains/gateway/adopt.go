package gateway

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/manglecp/manglecp/upstream"
)

// maxPerIntent is how many tools one adopted intent offers: the server
// returns at most five macro-tools by default, so every tool stays
// reachable.
const maxPerIntent = 5

// Adopt writes a starting rule pack for upstream name from its tools: the
// domain file declares each tool (so `manglecp check` passes on the pack
// alone) and intents grouping them by what their annotations say, or, for
// a tool without annotations, its name and description: read-only
// (NAME_read), destructive (NAME_change, each tool behind confirmation in
// the policy file), open-world (NAME_web: reaches beyond the server) and
// the rest (NAME_act), five tools at most per intent (NAME_read_2, ...
// beyond), so every tool is reachable from one intent. Read-only tools
// score higher than the others, and the first read-only tool is also
// offered, lower, beside the others.
func Adopt(name string, tools []upstream.Tool) (domain, policy string) {
	var read, change, web, act []string
	for _, t := range tools {
		n := toolName(name, t.Name)
		switch group(t) {
		case "read":
			read = append(read, n)
		case "change":
			change = append(change, n)
		case "web":
			web = append(web, n)
		default:
			act = append(act, n)
		}
	}
	var d, p strings.Builder
	fmt.Fprintf(&d, "# Starting rules for upstream %s, written by manglecp adopt: review the\n", name)
	fmt.Fprintf(&d, "# intents and their descriptions, and offer each tool where its job needs it.\n\n")
	write := func(kind, desc string, names []string, score int) {
		for i := 0; i*maxPerIntent < len(names); i++ {
			intent := name + "_" + kind
			if i > 0 {
				intent = fmt.Sprintf("%s_%d", intent, i+1)
			}
			part := names[i*maxPerIntent : min(len(names), (i+1)*maxPerIntent)]
			fmt.Fprintf(&d, "decl_intent(%s, %s).\n", mgString(intent), mgString(upstream.Truncate(desc+": "+strings.Join(trimPrefix(name, part), ", ")+".", 200)))
			for _, n := range part {
				fmt.Fprintf(&d, "relevant_to_intent(%s, %s, %d).\n", mgString(intent), mgString(n), score)
			}
			if kind != "read" {
				for _, r := range read[:min(len(read), 1)] {
					fmt.Fprintf(&d, "relevant_to_intent(%s, %s, %d).\n", mgString(intent), mgString(r), 77)
				}
			}
			d.WriteString("\n")
		}
	}
	write("read", "Read-only", read, 85)
	write("change", "Changes (asks the user first)", change, 81)
	write("web", "Reaches outside the server", web, 81)
	write("act", "Other actions", act, 81)
	d.WriteString("# The catalogue (the gateway also writes it from the live tool list).\n")
	for _, t := range tools {
		n := toolName(name, t.Name)
		fmt.Fprintf(&d, "tool(%s).\ntool_action(%s, %s).\n", mgString(n), mgString(n), mgString(name))
	}
	fmt.Fprintf(&p, "# Safety for upstream %s, written by manglecp adopt: destructive tools need\n", name)
	fmt.Fprintf(&p, "# the user's confirmation (delete a line to waive it after review).\n")
	for _, n := range change {
		fmt.Fprintf(&p, "requires_confirmation(%s).\n", mgString(n))
	}
	return d.String(), p.String()
}

func trimPrefix(name string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strings.TrimPrefix(n, name+"_")
	}
	return out
}

var (
	readName  = regexp.MustCompile(`^(get|list|read|search|find|fetch|describe|show|query|view|lookup|count|check|inspect|browse)([_\-.A-Z]|$)`)
	writeName = regexp.MustCompile(`^(delete|remove|drop|destroy|write|overwrite|update|set|put|create|move|rename|kill|reset|purge|truncate|edit|patch|post|send|execute|exec|run)([_\-.A-Z]|$)`)
	webWords  = regexp.MustCompile(`(?i)\b(url|http|web|internet|browser|fetch|download|email|api)\b`)
)

// group is a tool's group for Adopt: its annotations when it has them,
// else what its name (its first word) and description say; a tool
// nothing says is safe is a change (MCP's defaults), behind confirmation.
func group(t upstream.Tool) string {
	if t.Annotated {
		switch {
		case t.ReadOnly:
			return "read"
		case t.Destructive:
			return "change"
		case t.OpenWorld:
			return "web"
		}
		return "act"
	}
	lower := strings.ToLower(t.Name)
	switch {
	case writeName.MatchString(lower):
		return "change"
	case readName.MatchString(lower):
		return "read"
	case webWords.MatchString(t.Name + " " + t.Description):
		return "web"
	}
	return "change"
}
