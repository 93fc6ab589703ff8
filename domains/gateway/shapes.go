package gateway

import (
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/manglecp/manglecp/protocol"
)

// maxShapeFacts bounds the facts one answer becomes.
const maxShapeFacts = 100

// A reader reads the answer of an upstream tool whose form a pack knows
// into facts (the state delta), which later intents reason over: the pack
// declares their predicates (decl_predicate, "both") and its rules read
// them. args are the call's arguments.
type reader func(args map[string]any, text string) []protocol.Fact

// readers are the answers the embedded packs know, by pack and upstream
// tool name.
var readers = map[string]map[string]reader{
	"filesystem": {
		"list_directory": fsListing,
		"search_files":   fsMatches,
	},
	"playwright": {
		"browser_console_messages": pwConsole,
		"browser_network_requests": pwRequests,
	},
}

var (
	fsEntry   = regexp.MustCompile(`^\[(FILE|DIR)\] (.+)$`)
	pwLine    = regexp.MustCompile(`^\[(ERROR|WARNING|INFO|LOG|DEBUG)\] (.*?)(?: @ \S+)?$`)
	pwRequest = regexp.MustCompile(`^(?:\d+\. )?\[([A-Z]+)\] (\S+) => \[(\d{3})\]`)
)

// fsListing: list_directory's "[FILE] name" and "[DIR] name" lines become
// fs_listed(Path, Kind) with Path the listed directory joined with name
// and Kind "file" or "dir".
func fsListing(args map[string]any, text string) []protocol.Fact {
	dir, _ := args["path"].(string)
	var out []protocol.Fact
	for _, line := range lines(text) {
		m := fsEntry.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		kind := "file"
		if m[1] == "DIR" {
			kind = "dir"
		}
		out = append(out, protocol.NewFact("fs_listed", path.Join(dir, m[2]), kind))
		if len(out) == maxShapeFacts {
			break
		}
	}
	return out
}

// fsMatches: search_files answers one path a line: fs_listed(Path,
// "match").
func fsMatches(_ map[string]any, text string) []protocol.Fact {
	var out []protocol.Fact
	for _, line := range lines(text) {
		if !strings.HasPrefix(line, "/") {
			continue
		}
		out = append(out, protocol.NewFact("fs_listed", line, "match"))
		if len(out) == maxShapeFacts {
			break
		}
	}
	return out
}

// pwConsole: "[ERROR] message @ url:line" lines become
// pw_console(Level, Message), Level in lower case.
func pwConsole(_ map[string]any, text string) []protocol.Fact {
	var out []protocol.Fact
	for _, line := range lines(text) {
		m := pwLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		out = append(out, protocol.NewFact("pw_console", strings.ToLower(m[1]), bounded(m[2])))
		if len(out) == maxShapeFacts {
			break
		}
	}
	return out
}

// pwRequests: "N. [GET] url => [404] Not Found" lines become
// pw_request(Method, URL, Status).
func pwRequests(_ map[string]any, text string) []protocol.Fact {
	var out []protocol.Fact
	for _, line := range lines(text) {
		m := pwRequest.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		status, _ := strconv.Atoi(m[3])
		out = append(out, protocol.NewFact("pw_request", m[1], bounded(m[2]), status))
		if len(out) == maxShapeFacts {
			break
		}
	}
	return out
}

func lines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func bounded(s string) string {
	if len(s) > 500 {
		return s[:500]
	}
	return s
}
