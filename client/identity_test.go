package client_test

import (
	"encoding/json"
	"testing"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/protocol"
)

// TestStateAgreesWithServer: a client's State counts two facts as one
// exactly when a server does. For each pair, the server evaluates the
// first fact alone and both together (its facts_evaluated counts the
// facts it keeps); the State built from the pair holds one fact or two.
func TestStateAgreesWithServer(t *testing.T) {
	hs := serveHTTP(t, newServer(t, nil))
	s, err := client.Dial(ctxT(t), hs.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	url := func(v any) protocol.Fact { return protocol.Fact{Pred: "current_url", Args: []any{v}} }
	event := func(ts any, t *protocol.Temporal) protocol.Fact {
		return protocol.Fact{Pred: "console_event", Args: []any{"s1", "error", "boom", ts}, T: t}
	}
	named := protocol.Fact{Pred: "console_event", NamedArgs: map[string]any{"session_id": "s1", "level": "error", "message": "boom", "timestamp": 1771511400000}}
	pairs := []struct {
		name string
		a, b protocol.Fact
	}{
		{"equal strings", url("https://a"), url("https://a")},
		{"other strings", url("https://a"), url("https://b")},
		{"provenance is not identity", url("https://a"), protocol.Fact{Pred: "current_url", Args: []any{"https://a"}, Source: &protocol.Provenance{SourceType: "client"}, Category: protocol.CategorySession}},
		{"Go int and json.Number", event(1771511400000, nil), event(json.Number("1771511400000"), nil)},
		{"int64 wrapper and integer", event(map[string]any{"_type": "int64", "value": "1771511400000"}, nil), event(1771511400000, nil)},
		{"integer and integral float", event(5, nil), event(json.Number("5.0"), nil)},
		{"integral floats written two ways", event(json.Number("5e0"), nil), event(json.Number("5.0"), nil)},
		{"named and positional", named, event(1771511400000, nil)},
		{"same annotation", event(1, &protocol.Temporal{At: "2026-02-19T14:30:00Z"}), event(1, &protocol.Temporal{At: "2026-02-19T14:30:00Z"})},
		{"annotation and none", event(1, &protocol.Temporal{At: "2026-02-19T14:30:00Z"}), event(1, nil)},
		{"an instant written two ways", event(1, &protocol.Temporal{At: "2026-02-19T14:30:00Z"}), event(1, &protocol.Temporal{At: 1771511400000})},
	}
	// count is facts_evaluated for facts and the current_url that
	// observe requires.
	count := func(t *testing.T, facts ...protocol.Fact) int64 {
		t.Helper()
		facts = append([]protocol.Fact{url("https://base")}, facts...)
		resp, err := s.Evaluate(ctxT(t), &protocol.IntentRequest{Intent: protocol.Intent{Name: "observe"}, Facts: facts})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Diagnostics.FactsEvaluated
	}
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			serverSame := count(t, p.a) == count(t, p.a, p.b)
			st := s.NewState(p.a, p.b)
			if clientSame := len(st.Facts()) == 1; clientSame != serverSame {
				t.Errorf("the server counts them as one fact: %v; the client's State: %v", serverSame, clientSame)
			}
		})
	}
}
