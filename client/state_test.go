package client_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/protocol"
)

// profile declares phase_status/3 with arg names, a temporal event/1, an
// input url/1 and an output done/1.
func profile() *protocol.FactsProfile {
	return &protocol.FactsProfile{Predicates: []protocol.PredicateSchema{
		{Predicate: "phase_status", Arity: 3, ArgNames: []string{"spec", "phase", "status"}, Direction: protocol.DirectionBoth},
		{Predicate: "event", Arity: 1, Temporal: true, Direction: protocol.DirectionInput},
		{Predicate: "url", Arity: 1, Direction: protocol.DirectionInput},
		{Predicate: "done", Arity: 1, Direction: protocol.DirectionOutput},
	}}
}

// show renders facts as pred(args)@t, one per line, for comparison.
func show(t *testing.T, facts []protocol.Fact) string {
	t.Helper()
	var lines []string
	for _, f := range facts {
		var args string
		if f.Args != nil {
			args = strings.Trim(mustJSON(t, f.Args), "[]")
		} else {
			args = mustJSON(t, f.NamedArgs)
		}
		s := f.Pred + "(" + args + ")"
		if f.T != nil {
			s += "@" + mustJSON(t, f.T)
		}
		if f.Category != "" {
			s += "/" + f.Category
		}
		lines = append(lines, s)
	}
	return strings.Join(lines, "\n")
}

// TestStateDelta: retractions (exact, wildcard, named, temporal) apply
// before assertions, values compare as the server reads them, and no fact
// is held twice.
func TestStateDelta(t *testing.T) {
	ps := func(phase any, status any) protocol.Fact {
		return protocol.NewFact("phase_status", "spec-001", phase, status)
	}
	base := []protocol.Fact{ps(1, "done"), ps(2, "in_progress"), protocol.NewFact("phase_status", "spec-002", 2, "in_progress"), protocol.NewFact("url", "https://x")}
	tests := []struct {
		name  string
		start []protocol.Fact
		delta protocol.StateDelta
		want  string
	}{
		{"exact retraction then assertion (Spec 07 section 4.2)", base,
			protocol.StateDelta{Retract: []protocol.Fact{ps(2, "in_progress")}, Assert: []protocol.Fact{ps(2, "done")}},
			`phase_status("spec-001",1,"done")` + "\n" + `phase_status("spec-002",2,"in_progress")` + "\n" + `url("https://x")` + "\n" + `phase_status("spec-001",2,"done")`},
		{"wildcard: any status of spec-001 phase 2", base,
			protocol.StateDelta{Retract: []protocol.Fact{ps(2, nil)}},
			`phase_status("spec-001",1,"done")` + "\n" + `phase_status("spec-002",2,"in_progress")` + "\n" + `url("https://x")`},
		{"wildcards: everything of spec-001", base,
			protocol.StateDelta{Retract: []protocol.Fact{ps(nil, nil)}},
			`phase_status("spec-002",2,"in_progress")` + "\n" + `url("https://x")`},
		{"all wildcards: the whole predicate", base,
			protocol.StateDelta{Retract: []protocol.Fact{protocol.NewFact("phase_status", nil, nil, nil)}},
			`url("https://x")`},
		{"a pattern of another arity matches nothing", base,
			protocol.StateDelta{Retract: []protocol.Fact{protocol.NewFact("phase_status", nil, nil)}},
			show(t, base)},
		{"named pattern: absent names are wildcards", base,
			protocol.StateDelta{Retract: []protocol.Fact{{Pred: "phase_status", NamedArgs: map[string]any{"phase": 2}}}},
			`phase_status("spec-001",1,"done")` + "\n" + `url("https://x")`},
		{"numbers compare as JSON: 2 == json.Number(2) == float64(2)", base,
			protocol.StateDelta{Retract: []protocol.Fact{ps(json.Number("2"), nil), ps(float64(1), "done")}},
			`phase_status("spec-002",2,"in_progress")` + "\n" + `url("https://x")`},
		{"an integer is not a float", base,
			protocol.StateDelta{Retract: []protocol.Fact{ps(json.Number("1.0"), nil), ps(1.5, nil)}},
			show(t, base)},
		{"int64 wrapper equals its integer", []protocol.Fact{ps(map[string]any{"_type": "int64", "value": "9007199254740993"}, "x")},
			protocol.StateDelta{Retract: []protocol.Fact{ps(json.Number("9007199254740993"), nil)}}, ""},
		{"retract runs before assert", base,
			protocol.StateDelta{Retract: []protocol.Fact{protocol.NewFact("url", nil)}, Assert: []protocol.Fact{protocol.NewFact("url", "https://y")}},
			strings.Join(strings.Split(show(t, base), "\n")[:3], "\n") + "\n" + `url("https://y")`},
		{"assertions are not duplicated, metadata aside", base,
			protocol.StateDelta{Assert: []protocol.Fact{
				{Pred: "url", Args: []any{"https://x"}, Category: protocol.CategoryServer, Source: &protocol.Provenance{SourceType: "server"}},
				{Pred: "phase_status", NamedArgs: map[string]any{"spec": "spec-001", "phase": 1, "status": "done"}},
				protocol.NewFact("done", "a"), protocol.NewFact("done", "a")}},
			show(t, base) + "\n" + `done("a")`},
		{"temporal: a pattern without t matches every annotation", []protocol.Fact{
			fact(t, `{"pred":"event","args":["a"],"t":{"at":"2026-02-19T14:30:00Z"}}`),
			fact(t, `{"pred":"event","args":["a"],"t":{"at":1771511401000}}`),
			fact(t, `{"pred":"event","args":["b"]}`)},
			protocol.StateDelta{Retract: []protocol.Fact{protocol.NewFact("event", "a")}},
			`event("b")`},
		// Temporal bounds compare by their JSON text, as the server keys
		// facts (protocol.FactKey): the same instant written as RFC 3339 and
		// as epoch milliseconds is two annotations.
		{"temporal: a pattern with t matches the same annotation", []protocol.Fact{
			fact(t, `{"pred":"event","args":["a"],"t":{"at":"2026-02-19T14:30:00Z"}}`),
			fact(t, `{"pred":"event","args":["a"],"t":{"at":1771511401000}}`)},
			protocol.StateDelta{Retract: []protocol.Fact{fact(t, `{"pred":"event","args":["a"],"t":{"at":"2026-02-19T14:30:00Z"}}`)}},
			`event("a")@{"at":1771511401000}`},
		{"temporal: an instant written another way is another annotation", []protocol.Fact{
			fact(t, `{"pred":"event","args":["a"],"t":{"at":"2026-02-19T14:30:00Z"}}`)},
			protocol.StateDelta{Retract: []protocol.Fact{fact(t, `{"pred":"event","args":["a"],"t":{"at":1771511400000}}`)}},
			`event("a")@{"at":"2026-02-19T14:30:00Z"}`},
		{"temporal: the same fact at two times is two facts", nil,
			protocol.StateDelta{Assert: []protocol.Fact{
				fact(t, `{"pred":"event","args":["a"],"t":{"start":"2026-02-19T14:30:00Z","end":"_"}}`),
				fact(t, `{"pred":"event","args":["a"],"t":{"start":"2026-02-19T14:30:00Z","end":"_"}}`),
				fact(t, `{"pred":"event","args":["a"],"t":{"start":1771511400001,"end":"_"}}`)}},
			`event("a")@{"start":"2026-02-19T14:30:00Z","end":"_"}` + "\n" + `event("a")@{"start":1771511400001,"end":"_"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := client.NewState(profile(), tc.start...)
			st.ApplyDelta(tc.delta)
			if got := show(t, st.Facts()); got != tc.want {
				t.Errorf("facts:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestStateNext: following a suggested intent sends the working facts
// (without output-only ones, as session facts) plus the continuation facts,
// each once.
func TestStateNext(t *testing.T) {
	st := client.NewState(profile(), protocol.NewFact("url", "https://x"), protocol.NewFact("phase_status", "s", 1, "open"))
	st.Apply(&protocol.InvokeResponse{
		StateDelta: protocol.StateDelta{
			Retract: []protocol.Fact{protocol.NewFact("phase_status", "s", 1, nil)},
			Assert: []protocol.Fact{
				{Pred: "phase_status", Args: []any{"s", 1, "done"}, Category: protocol.CategoryServer, Source: &protocol.Provenance{SourceType: "server"}},
				{Pred: "done", Args: []any{"s"}, Category: protocol.CategoryServer},
			},
		},
		Next: &protocol.Next{
			SuggestedIntents:  []protocol.SuggestedIntent{{Name: "review", Params: map[string]any{"depth": 2}}},
			ContinuationFacts: []protocol.Fact{{Pred: "url", Args: []any{"https://x"}, Category: "session"}, protocol.NewFact("event", "e1")},
		},
	})
	sug := st.Suggested()
	if len(sug) != 1 {
		t.Fatalf("suggested %+v", sug)
	}
	req := st.Next(sug[0])
	if req.Intent.Name != "review" || req.Intent.Params["depth"] != 2 {
		t.Errorf("intent %+v", req.Intent)
	}
	want := `url("https://x")` + "\n" + `phase_status("s",1,"done")` + "\n" + `event("e1")`
	if got := show(t, req.Facts); got != want {
		t.Errorf("facts:\n%s\nwant:\n%s", got, want)
	}
	// The state still holds the output fact, with its metadata.
	if got := show(t, st.Facts()); !strings.Contains(got, `done("s")/server`) || !strings.Contains(got, `phase_status("s",1,"done")/server`) {
		t.Errorf("state:\n%s", got)
	}
	// The request owns its data.
	req.Facts[0].Args[0] = "changed"
	req.Intent.Params["depth"] = 3
	if got := show(t, st.Facts()); strings.Contains(got, "changed") || st.Suggested()[0].Params["depth"] != 2 {
		t.Errorf("modifying the request changed the state:\n%s", got)
	}
	// Without a profile nothing is left out; the zero State works.
	var zero client.State
	zero.Add(protocol.NewFact("done", "s"), protocol.NewFact("done", "s"))
	zero.ApplyDelta(protocol.StateDelta{Assert: []protocol.Fact{protocol.NewFact("done", "t")}})
	if got := len(zero.Request(protocol.Intent{Name: "x"}).Facts); got != 2 {
		t.Errorf("zero State without a profile: %d facts, want 2", got)
	}
}

// TestStateChain follows the browser domain's chain against a real
// server: diagnose, invoke, apply the delta, follow the suggested intent.
// The server accepts the facts the state sends.
func TestStateChain(t *testing.T) {
	s := memorySession(t, newServer(t, nil), nil, nil)
	ctx := ctxT(t)
	req := diagnoseRequest()
	st := s.NewState(req.Facts...)
	resp, err := s.Evaluate(ctx, st.Request(req.Intent))
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Invoke(ctx, &protocol.InvokeRequest{MacroID: macro(t, resp, "diagnose_causal_chain"), Args: map[string]any{"request_id": "r42"}})
	if err != nil {
		t.Fatal(err)
	}
	st.Apply(out)
	if got := show(t, st.Facts()); !strings.Contains(got, `diagnosed_error("r42","GET https://api.example.com/users returned HTTP 404")/server`) {
		t.Fatalf("state after the delta:\n%s", got)
	}
	sug := st.Suggested()
	if len(sug) == 0 || sug[0].Name != "observe" {
		t.Fatalf("suggested %+v", sug)
	}
	next := st.Next(sug[0])
	for _, f := range next.Facts {
		if f.Pred == "diagnosed_error" {
			t.Errorf("the output fact is sent: %+v", f)
		}
	}
	resp, err = s.Evaluate(ctx, next)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.MacroTools) == 0 {
		t.Error("observe offered nothing")
	}
}
