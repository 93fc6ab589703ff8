package browser

import (
	"encoding/json"
	"sort"
	"strconv"
	"time"

	"github.com/manglecp/manglecp/protocol"
)

// page is the typed view of the facts a macro-tool was synthesized from.
type page struct {
	urls      []string
	console   []consoleEvent
	requests  map[string]request
	responses map[string]response
	elements  []element
	goals     []string
}

type consoleEvent struct {
	session, level, message string
	ts                      int64
}

type request struct {
	session, id, method, url string
	ts                       int64
}

type response struct {
	session, id string
	status, ts  int64
}

type element struct{ id, kind, label string }

// readPage decodes validated facts. Facts were checked against the facts
// profile, so argument types are known.
func readPage(facts []protocol.Fact) *page {
	p := &page{requests: map[string]request{}, responses: map[string]response{}}
	for _, f := range facts {
		a := f.Args
		switch f.Pred {
		case "current_url":
			p.urls = append(p.urls, text(a[0]))
		case "console_event":
			p.console = append(p.console, consoleEvent{text(a[0]), text(a[1]), text(a[2]), integer(a[3])})
		case "net_request":
			p.requests[text(a[1])] = request{text(a[0]), text(a[1]), text(a[2]), text(a[3]), integer(a[4])}
		case "net_response":
			p.responses[text(a[1])] = response{text(a[0]), text(a[1]), integer(a[2]), integer(a[3])}
		case "interactive_element":
			p.elements = append(p.elements, element{text(a[0]), text(a[1]), text(a[2])})
		case "automation_goal":
			p.goals = append(p.goals, text(a[0]))
		}
	}
	sort.Strings(p.urls)
	sort.SliceStable(p.console, func(i, j int) bool {
		if p.console[i].ts != p.console[j].ts {
			return p.console[i].ts < p.console[j].ts
		}
		return p.console[i].message < p.console[j].message
	})
	sort.Slice(p.elements, func(i, j int) bool { return p.elements[i].id < p.elements[j].id })
	sort.Strings(p.goals)
	return p
}

func (p *page) url() string {
	if len(p.urls) == 0 {
		return ""
	}
	return p.urls[0]
}

// failed returns the responses with status >= 400, by request id.
func (p *page) failed() []response {
	var out []response
	for _, r := range p.responses {
		if r.status >= 400 {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// failedIDs returns the ids of the requests whose response (the last one
// given for the id, as readPage keeps) has status >= 400, sorted: what
// readPage(facts).failed() names, without reading the rest of the page.
func failedIDs(facts []protocol.Fact) []string {
	// Most requests succeed: only the ids with a failed response are
	// followed, so a long page needs no map of every request.
	var failing map[string]bool
	for _, f := range facts {
		if f.Pred == "net_response" && len(f.Args) >= 3 && integer(f.Args[2]) >= 400 {
			if failing == nil {
				failing = map[string]bool{}
			}
			failing[text(f.Args[1])] = true
		}
	}
	var out []string
	for i := len(facts) - 1; i >= 0 && len(failing) > 0; i-- {
		f := facts[i]
		if f.Pred != "net_response" || len(f.Args) < 3 {
			continue
		}
		id := text(f.Args[1])
		if !failing[id] {
			continue
		}
		delete(failing, id) // this is its last response
		if integer(f.Args[2]) >= 400 {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

func text(v any) string {
	s, _ := v.(string)
	return s
}

// integer reads a number argument; fractional values are truncated.
func integer(v any) int64 {
	n, ok := v.(json.Number)
	if !ok {
		return 0
	}
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i
	}
	f, _ := strconv.ParseFloat(string(n), 64)
	return int64(f)
}

// stamp renders epoch milliseconds as RFC 3339.
func stamp(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

func arg(args map[string]any, name string) string {
	s, _ := args[name].(string)
	return s
}
