package manglecp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/protocol"
)

// notYetTriggerable lists registry codes that no condition of this server
// can produce yet, with the issue that brings the condition. It may only
// shrink: TestRegistryCoverage fails when a listed code gains a case.
var notYetTriggerable = map[protocol.Code]string{}

// loadTimeOnly lists codes whose condition this server detects before it
// serves anything: no request can trigger them, because clients cannot
// submit rules. TestLoadTimeCodes proves start-up fails for each.
var loadTimeOnly = map[protocol.Code]string{
	protocol.CodeInvalidTemporalPattern: "dangerous temporal recursion in the rules stops start-up with file, line and predicate",
}

// errorCase triggers one registry code through real dispatch over HTTP
// (cancelled: in process, since the client that cancels never reads a
// reply) and checks code, status, correlation and details.
type errorCase struct {
	name   string
	code   protocol.Code
	id     string // expected id echo; "" = null
	run    func(t *testing.T) *reply
	detail func(t *testing.T, e *protocol.Error)
}

func errorCases() []errorCase {
	bad := func(payload map[string]any, facts ...map[string]any) map[string]any {
		payload["facts"] = facts
		return payload
	}
	intent := func(name string) map[string]any { return map[string]any{"intent": map[string]any{"name": name}} }
	url := map[string]any{"pred": "current_url", "args": []any{"https://example.com"}}
	return []errorCase{
		{name: "unsupported version", code: protocol.CodeUnsupportedVersion, id: "v1",
			run: func(t *testing.T) *reply {
				return newHarness(t, nil, nil).post("/manglecp/evaluate",
					[]byte(`{"type":"intent_request","id":"v1","manglecp":"2025-01-draft","payload":{}}`), nil)
			},
			detail: func(t *testing.T, e *protocol.Error) {
				if e.Details.RequestedVersion != "2025-01-draft" || fmt.Sprint(e.Details.SupportedVersions) != "[2026-02-draft]" {
					t.Errorf("version details %+v", e.Details)
				}
			}},
		{name: "malformed JSON", code: protocol.CodeMalformedMessage,
			run: func(t *testing.T) *reply {
				return newHarness(t, nil, nil).post("/manglecp/evaluate", []byte(`{"type":`), nil)
			}},
		{name: "request without id", code: protocol.CodeMalformedMessage,
			run: func(t *testing.T) *reply {
				return newHarness(t, nil, nil).post("/manglecp/evaluate", []byte(`{"type":"intent_request","id":null,"manglecp":"2026-02-draft","payload":{}}`), nil)
			}},
		{name: "missing intent name", code: protocol.CodeMalformedMessage, id: "m1",
			run: func(t *testing.T) *reply {
				return newHarness(t, nil, nil).evaluate("m1", map[string]any{"facts": []any{}})
			},
			detail: func(t *testing.T, e *protocol.Error) {
				if e.Details.Field != "intent.name" {
					t.Errorf("field %q", e.Details.Field)
				}
			}},
		{name: "message too large (Content-Length)", code: protocol.CodeMessageTooLarge,
			run: func(t *testing.T) *reply {
				h := newHarness(t, nil, func(o *manglecp.Options) { o.Limits.MaxMessageBytes = 2048 })
				return h.post("/manglecp/evaluate", []byte(strings.Repeat(" ", 4096)), nil)
			},
			detail: func(t *testing.T, e *protocol.Error) {
				if *e.Details.Limit != 2048 || *e.Details.Actual != 4096 {
					t.Errorf("limit details %+v", e.Details)
				}
			}},
		{name: "message too large (streamed body)", code: protocol.CodeMessageTooLarge,
			run: func(t *testing.T) *reply {
				h := newHarness(t, nil, func(o *manglecp.Options) { o.Limits.MaxMessageBytes = 2048 })
				req, _ := http.NewRequest(http.MethodPost, h.http.URL+"/manglecp/evaluate", strings.NewReader(strings.Repeat(" ", 1<<20)))
				req.ContentLength = -1 // chunked: the limit must hold while reading
				req.Header.Set("Content-Type", "application/json")
				return h.do(req)
			}},
		{name: "unknown type", code: protocol.CodeInvalidType, id: "t1",
			run: func(t *testing.T) *reply {
				return newHarness(t, nil, nil).post("/manglecp/evaluate", []byte(`{"type":"frobnicate","id":"t1","manglecp":"2026-02-draft","payload":{}}`), nil)
			}},
		{name: "type not served by the endpoint", code: protocol.CodeInvalidType, id: "t2",
			run: func(t *testing.T) *reply {
				return newHarness(t, nil, nil).post("/manglecp/evaluate", envelope(t, protocol.TypeInvokeRequest, "t2", map[string]any{"macro_id": "x", "args": map[string]any{}}), nil)
			}},
		// Over HTTP, credentials are checked before the body is read (issue 9
		// item 1); the id is still echoed from the body's first bytes.
		{name: "auth required", code: protocol.CodeAuthRequired, id: "a1",
			run: func(t *testing.T) *reply {
				h := newHarness(t, nil, func(o *manglecp.Options) { o.AuthTokens = []string{"correct-token-0123456789"} })
				return h.evaluate("a1", bad(intent("observe"), url))
			}},
		{name: "auth invalid", code: protocol.CodeAuthInvalid, id: "a2",
			run: func(t *testing.T) *reply {
				h := newHarness(t, nil, func(o *manglecp.Options) { o.AuthTokens = []string{"correct-token-0123456789"} })
				return h.post("/manglecp/evaluate", envelope(t, protocol.TypeIntentRequest, "a2", bad(intent("observe"), url)),
					map[string]string{"Authorization": "Bearer wrong-token"})
			}},
		{name: "auth insufficient (policy denies the intent)", code: protocol.CodeAuthInsufficient, id: "ai1",
			run: func(t *testing.T) *reply {
				h := newHarness(t, nil, func(o *manglecp.Options) {
					o.Identities = []manglecp.Identity{{Name: "observer", Token: "observer-token-0123456789", Permissions: []string{"intent:observe"}}}
				})
				return h.post("/manglecp/evaluate", envelope(t, protocol.TypeIntentRequest, "ai1", diagnoseRequest()),
					map[string]string{"X-MangleCP-API-Key": "observer-token-0123456789"})
			}},
		{name: "invalid facts (Spec 09 section 8)", code: protocol.CodeInvalidFacts, id: "req-bad",
			run: func(t *testing.T) *reply {
				return newHarness(t, nil, nil).evaluate("req-bad", bad(intent("observe"), url,
					map[string]any{"pred": "console_event", "args": []any{"s1", "error", "TypeError"}},
					map[string]any{"pred": "_manglecp_internal", "args": []any{"hack"}}))
			},
			detail: func(t *testing.T, e *protocol.Error) {
				v := e.Details.Violations
				if len(v) != 2 || v[0].FactIndex != 1 || v[0].Issue != protocol.CodeArityMismatch || *v[0].ExpectedArity != 4 ||
					*v[0].ActualArity != 3 || v[1].FactIndex != 2 || v[1].Issue != protocol.CodeReservedPredicate {
					t.Errorf("violations %s", mustJSON(v))
				}
				if !e.Recoverable {
					t.Error("invalid_facts must be recoverable")
				}
			}},
		{name: "unknown predicate", code: protocol.CodeUnknownPredicate, id: "u1",
			run: func(t *testing.T) *reply {
				return newHarness(t, nil, nil).evaluate("u1", bad(intent("observe"), url,
					map[string]any{"pred": "console_evnt", "args": []any{"s1"}}))
			},
			detail: func(t *testing.T, e *protocol.Error) {
				if v := e.Details.Violations; len(v) != 1 || v[0].Suggestion != "Did you mean 'console_event'?" {
					t.Errorf("violations %s", mustJSON(v))
				}
			}},
		{name: "arity mismatch", code: protocol.CodeArityMismatch, id: "ar1",
			run: func(t *testing.T) *reply {
				return newHarness(t, nil, nil).evaluate("ar1", bad(intent("observe"), map[string]any{"pred": "current_url", "args": []any{"a", "b"}}))
			}},
		{name: "type mismatch", code: protocol.CodeTypeMismatch, id: "ty1",
			run: func(t *testing.T) *reply {
				return newHarness(t, nil, nil).evaluate("ty1", bad(intent("observe"), map[string]any{"pred": "current_url", "args": []any{42}}))
			},
			detail: func(t *testing.T, e *protocol.Error) {
				v := e.Details.Violations[0]
				if v.ExpectedType != "string" || v.ActualType != "integer" || *v.ArgumentIndex != 0 {
					t.Errorf("violation %s", mustJSON(v))
				}
			}},
		{name: "reserved predicate", code: protocol.CodeReservedPredicate, id: "rp1",
			run: func(t *testing.T) *reply {
				return newHarness(t, nil, nil).evaluate("rp1", bad(intent("observe"), url, map[string]any{"pred": "_manglecp_x", "args": []any{}}))
			},
			detail: func(t *testing.T, e *protocol.Error) {
				if e.Recoverable {
					t.Error("reserved_predicate is not recoverable")
				}
			}},
		{name: "too many facts", code: protocol.CodeTooManyFacts, id: "tm1",
			run: func(t *testing.T) *reply {
				h := newHarness(t, nil, func(o *manglecp.Options) { o.Limits.MaxFactsPerRequest = 3 })
				return h.evaluate("tm1", bad(intent("observe"), url, url, url, url))
			},
			detail: func(t *testing.T, e *protocol.Error) {
				if *e.Details.Limit != 3 || *e.Details.Actual != 4 {
					t.Errorf("details %+v", e.Details)
				}
			}},
		{name: "evaluation timeout", code: protocol.CodeEvaluationTimeout, id: "to1",
			run: func(t *testing.T) *reply {
				facts := []map[string]any{url}
				for i := range 5000 {
					facts = append(facts, map[string]any{"pred": "console_event", "args": []any{"s1", "error", fmt.Sprintf("e%d", i), i}})
				}
				p := bad(intent("diagnose_error"), facts...)
				p["constraints"] = map[string]any{"max_compute_ms": 1}
				return newHarness(t, nil, nil).evaluate("to1", p)
			}},
		{name: "derivation limit (Spec 10 section 6.3)", code: protocol.CodeDerivationLimitExceeded, id: "gas",
			run: func(t *testing.T) *reply {
				p := diagnoseRequest()
				p["constraints"] = map[string]any{"max_facts_created": 10}
				return newHarness(t, nil, nil).evaluate("gas", p)
			},
			detail: func(t *testing.T, e *protocol.Error) {
				b := e.Details.Budget
				if b == nil || b.Limit != 10 || b.Consumed <= 10 || b.Unit != "derived_facts" || *e.Details.PartialResultsAvailable {
					t.Errorf("budget %s", mustJSON(e.Details))
				}
			}},
		{name: "evaluation failed (an external predicate fails)", code: protocol.CodeEvaluationFailed, id: "ef1",
			run: func(t *testing.T) *reply {
				d := browser.Domain(browser.Config{ReportDir: t.TempDir()})
				ext := d.External["report_exists"]
				ext.Compute = func(context.Context, *manglecp.ExternalInput) ([][]any, error) {
					return nil, errors.New("open /secret/reports: input/output error")
				}
				d.External["report_exists"] = ext
				return newHarness(t, &d, nil).evaluate("ef1", diagnoseRequest())
			}},
		{name: "interval limit exceeded", code: protocol.CodeIntervalLimitExceeded, id: "il1",
			run: func(t *testing.T) *reply {
				ev := func(at string) map[string]any {
					return map[string]any{"pred": "console_event", "args": []any{"s1", "error", "same", 1}, "t": map[string]any{"at": at}}
				}
				p := bad(intent("diagnose_error"), url, ev("2026-02-19T14:00:00Z"), ev("2026-02-19T14:01:00Z"), ev("2026-02-19T14:02:00Z"))
				p["constraints"] = map[string]any{"max_intervals_per_atom": 2}
				return newHarness(t, nil, nil).evaluate("il1", p)
			},
			detail: func(t *testing.T, e *protocol.Error) {
				if b := e.Details.Budget; b == nil || b.Limit != 2 || b.Unit != "intervals_per_atom" {
					t.Errorf("budget %s", mustJSON(e.Details))
				}
			}},
		{name: "macro expired", code: protocol.CodeMacroExpired, id: "mx1",
			run: func(t *testing.T) *reply {
				var now atomic.Pointer[time.Time]
				now.Store(&fixedNow)
				h := newHarness(t, nil, func(o *manglecp.Options) { o.Now = func() time.Time { return *now.Load() } })
				m := tool(t, h.evaluate("e", diagnoseRequest()).intentResponse(t), "diagnose_causal_chain")
				later := time.Date(2026, 2, 19, 14, 35, 1, 0, time.UTC) // the server's clock decides (Spec 07 section 2.3)
				now.Store(&later)
				return h.invoke("mx1", map[string]any{"macro_id": m.MacroID, "args": map[string]any{"request_id": "r42"}})
			},
			detail: func(t *testing.T, e *protocol.Error) {
				if e.Details.ExpiredAt != "2026-02-19T14:35:00Z" {
					t.Errorf("details %s", mustJSON(e.Details))
				}
			}},
		{name: "macro not found", code: protocol.CodeMacroNotFound, id: "nf1",
			run: func(t *testing.T) *reply {
				return newHarness(t, nil, nil).invoke("nf1", map[string]any{"macro_id": "nope-0000", "args": map[string]any{}})
			},
			detail: func(t *testing.T, e *protocol.Error) {
				if e.Details.MacroID != "nope-0000" {
					t.Errorf("details %+v", e.Details)
				}
			}},
		{name: "schema validation failed", code: protocol.CodeSchemaValidationFailed, id: "sv1",
			run: func(t *testing.T) *reply {
				h := newHarness(t, nil, nil)
				m := tool(t, h.evaluate("e", diagnoseRequest()).intentResponse(t), "diagnose_causal_chain")
				return h.invoke("sv1", map[string]any{"macro_id": m.MacroID, "args": map[string]any{"include_network": "yes", "extra": 1}})
			},
			detail: func(t *testing.T, e *protocol.Error) {
				got := mustJSON(e.Details.SchemaErrors)
				for _, want := range []string{`"path":"/request_id"`, `"keyword":"required"`, `"path":"/include_network"`, `"keyword":"type"`, `"path":"/extra"`, `"keyword":"additionalProperties"`} {
					if !strings.Contains(got, want) {
						t.Errorf("schema_errors %s lack %s", got, want)
					}
				}
			}},
		{name: "confirmation required", code: protocol.CodeConfirmationRequired, id: "c1",
			run: func(t *testing.T) *reply {
				h := newHarness(t, nil, nil)
				m := tool(t, h.evaluate("e", diagnoseRequest()).intentResponse(t), "write_diagnosis_report")
				return h.invoke("c1", map[string]any{"macro_id": m.MacroID, "args": map[string]any{"request_id": "r42"}})
			}},
		{name: "confirmation invalid", code: protocol.CodeConfirmationInvalid, id: "c2",
			run: func(t *testing.T) *reply {
				h := newHarness(t, nil, nil)
				m := tool(t, h.evaluate("e", diagnoseRequest()).intentResponse(t), "write_diagnosis_report")
				return h.invoke("c2", map[string]any{"macro_id": m.MacroID, "args": map[string]any{"request_id": "r42"},
					"confirmation_token": h.srv.ConfirmationToken("another-macro")})
			}},
		{name: "execution failed (panic)", code: protocol.CodeExecutionFailed, id: "x1",
			run: func(t *testing.T) *reply { return invokeFault(t, "panicky", "x1") }},
		{name: "execution failed (error)", code: protocol.CodeExecutionFailed, id: "x2",
			run: func(t *testing.T) *reply { return invokeFault(t, "failing", "x2") }},
		{name: "server not ready (draining)", code: protocol.CodeServerNotReady, id: "d1",
			run: func(t *testing.T) *reply {
				h := newHarness(t, nil, nil)
				h.srv.Drain()
				return h.evaluate("d1", bad(intent("observe"), url))
			},
			detail: func(t *testing.T, e *protocol.Error) {
				if e.RetryAfterMS == nil || *e.RetryAfterMS <= 0 {
					t.Error("server_not_ready needs retry_after_ms")
				}
			}},
		{name: "rate limited", code: protocol.CodeRateLimited, id: "rl2",
			run: func(t *testing.T) *reply {
				h := newHarness(t, nil, func(o *manglecp.Options) { o.RateLimit, o.RateBurst = 0.001, 1 })
				if r := h.evaluate("rl1", bad(intent("observe"), url)); r.status != http.StatusOK {
					t.Fatalf("first request: %s", r.raw)
				}
				return h.evaluate("rl2", bad(intent("observe"), url))
			},
			detail: func(t *testing.T, e *protocol.Error) {
				if e.RetryAfterMS == nil || *e.RetryAfterMS <= 0 {
					t.Error("rate_limited needs retry_after_ms")
				}
			}},
		{name: "internal error (unencodable result)", code: protocol.CodeInternalError, id: "ie1",
			run: func(t *testing.T) *reply { return invokeFault(t, "unencodable", "ie1") }},
		{name: "cancelled", code: protocol.CodeCancelled, id: "cx1",
			run: func(t *testing.T) *reply {
				h := newHarness(t, nil, nil)
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				env := h.srv.Handle(ctx, &protocol.Inbound{Data: envelope(t, protocol.TypeIntentRequest, "cx1", diagnoseRequest())})
				raw, _ := env.Encode()
				return &reply{status: protocol.CodeCancelled.HTTPStatus(), env: *env, raw: raw}
			}},
	}
}

// invokeFault evaluates the fault domain for tool and invokes it.
func invokeFault(t *testing.T, name, id string) *reply {
	h := newHarness(t, faultDomain(nil), nil)
	resp := h.evaluate("e", map[string]any{"intent": map[string]any{"name": "fault"},
		"facts": []any{map[string]any{"pred": "fault", "args": []any{name}}}, "options": map[string]any{"disclosure_preference": "full"}}).intentResponse(t)
	m := tool(t, resp, name)
	r := h.invoke(id, map[string]any{"macro_id": m.MacroID, "args": map[string]any{}})
	logs := h.logs.String()
	if !strings.Contains(logs, `"request_id":"`+id+`"`) {
		t.Errorf("the failure was not logged with the request id: %s", logs)
	}
	return r
}

func TestErrorCodes(t *testing.T) {
	for _, tc := range errorCases() {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.run(t)
			e := r.errorPayload(t)
			if e.Code != tc.code {
				t.Fatalf("code %s, want %s: %s", e.Code, tc.code, r.raw)
			}
			info, _ := protocol.Lookup(tc.code)
			if r.status != info.HTTPStatus {
				t.Errorf("HTTP status %d, want %d", r.status, info.HTTPStatus)
			}
			if e.Recoverable != info.Recoverable {
				t.Errorf("recoverable %v, want %v", e.Recoverable, info.Recoverable)
			}
			if got := r.env.IDString(); got != tc.id {
				t.Errorf("id %q, want %q", got, tc.id)
			}
			if e.Message == "" {
				t.Error("empty message")
			}
			if tc.detail != nil {
				if e.Details == nil {
					e.Details = &protocol.ErrorDetails{} // detail checks report what is missing
				}
				tc.detail(t, e)
			}
		})
	}
}

// TestRegistryCoverage is the meta-test: every registry code has a case in
// errorCases, except the codes in notYetTriggerable, which must not.
func TestRegistryCoverage(t *testing.T) {
	covered := map[protocol.Code]bool{}
	for _, tc := range errorCases() {
		covered[tc.code] = true
	}
	for _, info := range protocol.Codes() {
		_, allowed := notYetTriggerable[info.Code]
		if _, ok := loadTimeOnly[info.Code]; ok {
			allowed = true
		}
		switch {
		case covered[info.Code] && allowed:
			t.Errorf("%s now has a test: remove it from notYetTriggerable", info.Code)
		case !covered[info.Code] && !allowed:
			t.Errorf("registry code %s has no test that triggers it", info.Code)
		}
	}
}

// TestNoLeaks scans every error response the suite produced for stack
// traces, Go file paths, rule source and internal paths. It runs the error
// cases again so that it does not depend on test order.
func TestNoLeaks(t *testing.T) {
	for _, tc := range errorCases() {
		t.Run(tc.name, func(t *testing.T) { tc.run(t) })
	}
	allReplies.mu.Lock()
	bodies := append([][]byte(nil), allReplies.bodies...)
	allReplies.mu.Unlock()
	if len(bodies) < len(errorCases()) {
		t.Fatalf("only %d error bodies recorded", len(bodies))
	}
	scanForLeaks(t, bodies)
}

func TestCancelledDuringInvocation(t *testing.T) {
	started := make(chan struct{})
	h := newHarness(t, faultDomain(started), nil)
	resp := h.evaluate("e", map[string]any{"intent": map[string]any{"name": "fault"},
		"facts": []any{map[string]any{"pred": "fault", "args": []any{"slow"}}}, "options": map[string]any{"disclosure_preference": "full"}}).intentResponse(t)
	m := tool(t, resp, "slow")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *protocol.Envelope)
	go func() {
		done <- h.srv.Handle(ctx, &protocol.Inbound{Data: envelope(t, protocol.TypeInvokeRequest, "slow-1", map[string]any{"macro_id": m.MacroID, "args": map[string]any{}})})
	}()
	<-started
	cancel()
	select {
	case env := <-done:
		if env.Type != protocol.TypeError || !strings.Contains(string(env.Payload), `"cancelled"`) || env.IDString() != "slow-1" {
			t.Fatalf("got %s %s", env.Type, env.Payload)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the action did not stop when the request was cancelled")
	}
}
