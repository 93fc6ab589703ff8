package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
)

func num(n int64) json.Number { return json.Number(strconv.FormatInt(n, 10)) }

// pageFacts: r1 fails with 500 at t=1000 and two errors follow it in s1;
// r2 fails in s2 with no error after it; r3 succeeds.
func pageFacts() []protocol.Fact {
	return []protocol.Fact{
		protocol.NewFact("current_url", "https://shop.example.com"),
		protocol.NewFact("net_request", "s1", "r1", "POST", "https://api/cart", num(900)),
		protocol.NewFact("net_response", "s1", "r1", num(500), num(1000)),
		protocol.NewFact("console_event", "s1", "error", "before the failure", num(500)),
		protocol.NewFact("console_event", "s1", "error", "Cart is undefined", num(1200)),
		protocol.NewFact("console_event", "s1", "warning", "slow", num(1300)),
		protocol.NewFact("console_event", "s1", "error", "Cart is undefined", num(20000)),
		protocol.NewFact("net_response", "s2", "r2", num(404), num(1000)),
		protocol.NewFact("console_event", "s1", "error", "other session", num(2000)),
		protocol.NewFact("net_response", "s1", "r3", num(200), num(1000)),
		protocol.NewFact("interactive_element", "q", "search", "Search"),
		protocol.NewFact("interactive_element", "buy", "button", "Buy"),
		protocol.NewFact("automation_goal", "find a lamp"),
	}
}

func TestTrace(t *testing.T) {
	t.Parallel()
	p := readPage(pageFacts())
	for _, tc := range []struct {
		name       string
		request    string
		network    bool
		steps      int
		errors     int
		confidence float64
		rootCause  string
	}{
		{"errors after the failure in its session", "r1", true, 5, 3, 0.9, "POST https://api/cart returned HTTP 500"},
		{"without network steps", "r1", false, 3, 3, 0.9, "POST https://api/cart returned HTTP 500"},
		{"no error follows", "r2", true, 1, 0, 0.1, "request r2 returned HTTP 404; no console error followed it in session s2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch, err := trace(p, tc.request, tc.network)
			if err != nil {
				t.Fatal(err)
			}
			if len(ch.steps) != tc.steps || ch.errors != tc.errors || ch.confidence() != tc.confidence || ch.rootCause != tc.rootCause {
				t.Errorf("got %d steps, %d errors, confidence %v, %q", len(ch.steps), ch.errors, ch.confidence(), ch.rootCause)
			}
		})
	}
	if _, err := trace(p, "r9", true); err == nil {
		t.Error("unknown request traced")
	}
}

func TestAutomationPlan(t *testing.T) {
	t.Parallel()
	a := &actions{}
	for _, tc := range []struct {
		name     string
		args     map[string]any
		valid    bool
		problems string
	}{
		{"fill a search box", map[string]any{"target_element": "q", "action": "fill", "value": "lamp"}, true, ""},
		{"click a button", map[string]any{"target_element": "buy", "action": "click"}, true, ""},
		{"read anything", map[string]any{"target_element": "q", "action": "read"}, true, ""},
		{"fill a button", map[string]any{"target_element": "buy", "action": "fill", "value": "x"}, false, "cannot fill a button"},
		{"fill without value", map[string]any{"target_element": "q", "action": "fill"}, false, "fill needs a value"},
		{"click with a value", map[string]any{"target_element": "buy", "action": "click", "value": "x"}, false, "click takes no value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := a.automationPlan(context.Background(), &manglecp.Call{Facts: pageFacts(), Args: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			problems := strings.Join(out.Result["problems"].([]string), "; ")
			if out.Result["valid"] != tc.valid || !strings.Contains(problems, tc.problems) {
				t.Errorf("valid %v problems %q", out.Result["valid"], problems)
			}
			if tc.valid && len(out.Result["plan"].([]any)) != 4 {
				t.Errorf("plan %v", out.Result["plan"])
			}
		})
	}
}

func TestObserveAndConsole(t *testing.T) {
	t.Parallel()
	a := &actions{}
	out, err := a.observeSummary(context.Background(), &manglecp.Call{Facts: pageFacts(), Args: map[string]any{"focus": "all"}})
	if err != nil {
		t.Fatal(err)
	}
	net := out.Result["network"].(map[string]any)
	if len(net["failed"].([]any)) != 2 || out.Result["console"].(map[string]any)["total"] != 5 {
		t.Errorf("summary %+v", out.Result)
	}
	out, err = a.observeSummary(context.Background(), &manglecp.Call{Facts: pageFacts(), Args: map[string]any{"focus": "console"}})
	if err != nil || out.Result["network"] != nil || out.Events[1].Status != protocol.EventSkipped {
		t.Errorf("focus console: %+v %v", out.Result, err)
	}
	out, err = a.consoleErrors(context.Background(), &manglecp.Call{Facts: pageFacts(), Args: map[string]any{}})
	if err != nil || out.Result["total"] != 4 || len(out.Result["errors"].([]any)) != 3 {
		t.Errorf("console errors %+v %v", out.Result, err)
	}
}

func TestWriteReportFailsCleanly(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "not-a-dir")
	_ = os.WriteFile(file, nil, 0o644)
	a := &actions{reports: &reports{dir: file}}
	_, err := a.writeReport(context.Background(), &manglecp.Call{Progress: func(string, string, float64) {}, Facts: pageFacts(), MacroID: "write_diagnosis_report-0123456789abcdef", Args: map[string]any{"request_id": "r1", "title": "t"}})
	if err == nil {
		t.Fatal("writing into a file path succeeded")
	}
}

// TestFailedIDsMatchesPage: failedIDs names exactly the failed requests
// readPage finds, including a request answered twice (the last answer
// counts) and facts of other predicates.
func TestFailedIDsMatchesPage(t *testing.T) {
	t.Parallel()
	n := func(i int) json.Number { return json.Number(fmt.Sprint(i)) }
	facts := []protocol.Fact{
		protocol.NewFact("current_url", "https://app.example.com/"),
		protocol.NewFact("net_response", "s1", "r2", n(500), n(10)),
		protocol.NewFact("net_response", "s1", "r1", n(404), n(11)),
		protocol.NewFact("console_event", "s1", "error", "boom", n(12)),
		protocol.NewFact("net_response", "s1", "r3", n(200), n(13)),
		protocol.NewFact("net_response", "s1", "r2", n(200), n(14)), // answered again: now fine
		protocol.NewFact("net_response", "s2", "r4", n(200), n(15)),
		protocol.NewFact("net_response", "s2", "r4", n(503), n(16)),
	}
	var want []string
	for _, r := range readPage(facts).failed() {
		want = append(want, r.id)
	}
	if got := failedIDs(facts); !slices.Equal(got, want) || len(got) != 2 {
		t.Fatalf("failedIDs = %v, readPage = %v", got, want)
	}
}

// TestFailedIDsRandomPages: on random pages of valid facts (few ids
// answered many times, in any order) failedIDs agrees with readPage.
func TestFailedIDsRandomPages(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(16, 9))
	statuses := []int64{200, 204, 301, 399, 400, 404, 500, 503}
	for page := range 500 {
		var facts []protocol.Fact
		for i := range rng.IntN(40) {
			id := fmt.Sprint("r", rng.IntN(6))
			switch rng.IntN(4) {
			case 0:
				facts = append(facts, protocol.NewFact("net_request", "s1", id, "GET", "https://x", num(int64(i))))
			case 1:
				facts = append(facts, protocol.NewFact("console_event", "s1", "error", id, num(int64(i))))
			default:
				facts = append(facts, protocol.NewFact("net_response", "s1", id, num(statuses[rng.IntN(len(statuses))]), num(int64(i))))
			}
		}
		var want []string
		for _, r := range readPage(facts).failed() {
			want = append(want, r.id)
		}
		if got := failedIDs(facts); !slices.Equal(got, want) {
			t.Fatalf("page %d: failedIDs = %v, readPage = %v\n%v", page, got, want, facts)
		}
	}
}

// BenchmarkFailedIDs: the external predicate's scan of a 10,000-fact
// page in which one response in a hundred fails.
func BenchmarkFailedIDs(b *testing.B) {
	var facts []protocol.Fact
	for i := range 10000 {
		id := fmt.Sprint("r", i/5)
		switch i % 5 {
		case 0, 1:
			facts = append(facts, protocol.NewFact("net_request", "s1", id, "GET", "https://api/x", num(int64(i))))
		case 2, 3:
			status := int64(200)
			if i%100 == 2 {
				status = 404
			}
			facts = append(facts, protocol.NewFact("net_response", "s1", id, num(status), num(int64(i))))
		default:
			facts = append(facts, protocol.NewFact("console_event", "s1", "info", "m", num(int64(i))))
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		failedIDs(facts)
	}
}
