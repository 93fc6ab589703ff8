package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/protocol"
)

// counting counts the requests a server handles.
type counting struct {
	*manglecp.Server
	n atomic.Int64
}

func (c *counting) Handle(ctx context.Context, in *protocol.Inbound) *protocol.Envelope {
	c.n.Add(1)
	return c.Server.Handle(ctx, in)
}

// fact decodes a fact written as JSON.
func fact(t *testing.T, src string) protocol.Fact {
	t.Helper()
	var f protocol.Fact
	if err := json.Unmarshal([]byte(src), &f); err != nil {
		t.Fatalf("fact %s: %v", src, err)
	}
	return f
}

// TestLocalValidation: for each request, the error the client finds before
// sending equals, field for field and with the same status, the error the
// server answers when the client skips its check; valid requests pass
// both.
func TestLocalValidation(t *testing.T) {
	const limit = 6
	srv := &counting{Server: newServer(t, func(o *manglecp.Options) { o.Limits.MaxFactsPerRequest = limit })}
	hs := serveHTTP(t, srv)
	local, err := client.Dial(ctxT(t), hs.URL, &client.Options{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	remote, err := client.Dial(ctxT(t), hs.URL, &client.Options{MaxAttempts: 1, SkipFactValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()

	url := protocol.NewFact("current_url", "https://app.example.com")
	tests := []struct {
		name   string
		intent string
		facts  []protocol.Fact
		code   protocol.Code // "" for a valid request
	}{
		{"valid", "observe", []protocol.Fact{url}, ""},
		{"valid named args and Go numbers", "diagnose_error", []protocol.Fact{url,
			fact(t, `{"pred":"net_response","named_args":{"session_id":"s1","request_id":"r1","status":500,"timestamp":1771510199500}}`),
			protocol.NewFact("console_event", "s1", "error", "boom", float64(1771510200000)),
			protocol.NewFact("net_request", "s1", "r1", "GET", "https://api", int64(1771510199000)),
		}, ""},
		{"valid temporal", "observe", []protocol.Fact{url,
			fact(t, `{"pred":"console_event","args":["s1","error","boom",1771510200000],"t":{"at":"2026-02-19T14:30:00Z"}}`)}, ""},
		{"arity mismatch", "observe", []protocol.Fact{url, protocol.NewFact("console_event", "s1", "error", "TypeError")}, protocol.CodeArityMismatch},
		{"spec 09 section 8 example", "observe", []protocol.Fact{url,
			protocol.NewFact("console_event", "s1", "error", "TypeError"),
			protocol.NewFact("_manglecp_internal", "hack")}, protocol.CodeInvalidFacts},
		{"reserved predicate", "observe", []protocol.Fact{url, protocol.NewFact("_manglecp_x")}, protocol.CodeReservedPredicate},
		{"unknown predicate with suggestion", "observe", []protocol.Fact{url, protocol.NewFact("curent_url", "x")}, protocol.CodeUnknownPredicate},
		{"type mismatch", "observe", []protocol.Fact{url, protocol.NewFact("net_response", "s1", "r1", "404", 1)}, protocol.CodeTypeMismatch},
		{"null is not a fact argument", "observe", []protocol.Fact{url, protocol.NewFact("net_response", "s1", nil, 404, 1)}, protocol.CodeInvalidFacts},
		{"missing required fact", "diagnose_error", []protocol.Fact{protocol.NewFact("net_response", "s1", "r1", 404, 1)}, protocol.CodeInvalidFacts},
		// A state delta fed back (Spec 07 section 4.1; issue 9 item 15): accepted.
		{"output predicate", "observe", []protocol.Fact{url, protocol.NewFact("diagnosed_error", "r1", "cause")}, ""},
		{"server category", "observe", []protocol.Fact{fact(t, `{"pred":"current_url","args":["x"],"category":"server"}`)}, ""},
		{"unknown category", "observe", []protocol.Fact{fact(t, `{"pred":"current_url","args":["x"],"category":"client"}`)}, protocol.CodeInvalidFacts},
		{"non-integral float for a number", "observe", []protocol.Fact{url, protocol.NewFact("net_response", "s1", "r1", 404.5, 1)}, protocol.CodeTypeMismatch},
		{"t on an atemporal predicate", "observe", []protocol.Fact{fact(t, `{"pred":"current_url","args":["x"],"t":{"at":"2026-02-19T14:30:00Z"}}`)}, protocol.CodeInvalidFacts},
		{"bad time", "observe", []protocol.Fact{url, fact(t, `{"pred":"console_event","args":["s1","error","boom",1],"t":{"at":"yesterday"}}`)}, protocol.CodeInvalidFacts},
		{"unknown named arg", "observe", []protocol.Fact{url, fact(t, `{"pred":"net_response","named_args":{"session":"s1","request_id":"r1","status":1,"timestamp":1}}`)}, protocol.CodeInvalidFacts},
		{"bad int64 wrapper", "observe", []protocol.Fact{url, protocol.NewFact("net_response", "s1", "r1", map[string]any{"_type": "int64", "value": "x"}, 1)}, protocol.CodeTypeMismatch},
		{"integer beyond int64", "observe", []protocol.Fact{url, protocol.NewFact("net_response", "s1", "r1", json.Number("99999999999999999999"), 1)}, protocol.CodeTypeMismatch},
		{"several facts and a missing one", "diagnose_error", []protocol.Fact{
			protocol.NewFact("net_response", "s1", "r1"),
			protocol.NewFact("curent_url", "x"),
			protocol.NewFact("net_request", 1, "r1", "GET", "u", 1),
		}, protocol.CodeInvalidFacts},
		{"too many facts", "observe", []protocol.Fact{url, url, url, url, url, url, url}, protocol.CodeTooManyFacts},
		{"unknown intent, valid facts", "no_such_intent", []protocol.Fact{url}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := &protocol.IntentRequest{Intent: protocol.Intent{Name: tc.intent}, Facts: tc.facts}
			before := srv.n.Load()
			_, lerr := local.Evaluate(ctxT(t), req)
			sent := srv.n.Load() - before
			_, rerr := remote.Evaluate(ctxT(t), req)
			if tc.code == "" {
				if lerr != nil || rerr != nil {
					t.Fatalf("valid request: local %v, server %v", lerr, rerr)
				}
				if sent != 1 {
					t.Errorf("%d requests sent for a valid request", sent)
				}
				return
			}
			var le, re *client.Error
			if !errors.As(lerr, &le) || !errors.As(rerr, &re) {
				t.Fatalf("local %v, server %v", lerr, rerr)
			}
			if !le.Local || re.Local || sent != 0 {
				t.Errorf("local flag %v/%v, %d requests sent by the validating client", le.Local, re.Local, sent)
			}
			if le.Code() != tc.code {
				t.Errorf("code %s, want %s", le.Code(), tc.code)
			}
			if l, r := mustJSON(t, le.Payload), mustJSON(t, re.Payload); l != r {
				t.Errorf("local and server errors differ:\nlocal  %s\nserver %s", l, r)
			}
			if le.Status != re.Status {
				t.Errorf("status %d, server %d", le.Status, re.Status)
			}
		})
	}
}
