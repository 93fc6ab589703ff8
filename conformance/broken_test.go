package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/conformance"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// breakage is a deliberately broken server and the checks that must
// catch it.
type breakage struct {
	name string
	// over is "http" (default), "websocket", or a target maker.
	over   string
	target func(t *testing.T, base string) string
	// opts configure the real server; wrap breaks it (nil: unbroken);
	// mw breaks its HTTP binding.
	opts  func(*manglecp.Options)
	wrap  func(srv *manglecp.Server) *broken
	mw    func(http.Handler) http.Handler
	token string
	// slow replaces the fixture's slow request (with opts that let it run).
	slow *conformance.FixtureSlow
	// fails are the checks that must FAIL.
	fails []string
}

// slowerFixture is the browser fixture with slow replaced, when set.
func slowerFixture(t *testing.T, slow *conformance.FixtureSlow) *conformance.Fixture {
	f := browserFixture(t)
	if slow != nil {
		c := *f
		c.Slow = slow
		f = &c
	}
	return f
}

// quadraticSlow is a request that runs for about a second on a server
// whose limits let it: n failed responses and n later console errors in
// one session, so failure_followed_by_error joins n*n pairs. (A server
// ignoring cancel is caught only when its evaluation runs well past the
// cancel; within the default work budget no request runs that long.)
func quadraticSlow(n int) *conformance.FixtureSlow {
	return &conformance.FixtureSlow{
		Intent: conformance.FixtureIntent{Name: "diagnose_error"},
		Facts:  []json.RawMessage{json.RawMessage(`{"pred": "current_url", "args": ["https://app.example.com/"]}`)},
		Repeat: json.RawMessage(`[{"pred": "net_response", "args": ["s1", "r{i}", 500, "{i:number}"]},
			{"pred": "console_event", "args": ["s1", "error", "e{i}", "{i:number}"]}]`),
		Count: n,
	}
}

// roomyLimits lets quadraticSlow run.
func roomyLimits(o *manglecp.Options) {
	o.Limits.MaxEvaluationWork = 1 << 40
	o.Limits.MaxDerivedFacts = 100_000_000
}

const testToken = "conformance-test-token-0123456789"

func withAuth(o *manglecp.Options) { o.AuthTokens = []string{testToken} }

// onAnswers breaks every answer of type t with edit.
func onAnswers(t protocol.MessageType, edit func(req, ans map[string]any)) func(*manglecp.Server) *broken {
	return func(srv *manglecp.Server) *broken {
		return &broken{srv: srv, out: func(req, ans map[string]any) {
			if isType(ans, t) {
				edit(req, ans)
			}
		}}
	}
}

// onErrors breaks every error answer with code (any code when "").
func onErrors(code protocol.Code, edit func(req, ans map[string]any)) func(*manglecp.Server) *broken {
	return onAnswers(protocol.TypeError, func(req, ans map[string]any) {
		if code == "" || errorCode(ans) == string(code) {
			edit(req, ans)
		}
	})
}

// onManifest breaks the manifest payload.
func onManifest(edit func(m map[string]any)) func(*manglecp.Server) *broken {
	return func(srv *manglecp.Server) *broken { return &broken{srv: srv, manifest: edit} }
}

// onRequests rewrites every request before the server sees it.
func onRequests(edit func(req map[string]any)) func(*manglecp.Server) *broken {
	return func(srv *manglecp.Server) *broken { return &broken{srv: srv, in: edit} }
}

// refuse answers requests that match with an error instead of the server.
func refuse(match func(req map[string]any) bool, code protocol.Code) func(*manglecp.Server) *broken {
	return func(srv *manglecp.Server) *broken {
		return &broken{srv: srv, answer: func(req map[string]any) map[string]any {
			if isType(req, protocol.TypeIntentRequest) && match(req) {
				return errorEnvelope(req, code, "refused by the breakage")
			}
			return nil
		}}
	}
}

// anyFact reports whether a fact of the request satisfies pred.
func anyFact(req map[string]any, pred func(f map[string]any) bool) bool {
	for _, x := range requestFacts(req) {
		if f, ok := x.(map[string]any); ok && pred(f) {
			return true
		}
	}
	return false
}

// violations returns the violations of an error answer.
func violations(ans map[string]any) []map[string]any {
	d, _ := payloadOf(ans)["details"].(map[string]any)
	list, _ := d["violations"].([]any)
	var out []map[string]any
	for _, x := range list {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func breakages() []breakage {
	var macroSeq atomic.Int64
	return []breakage{
		// Manifest.
		{name: "manifest with an id", mw: httpRewrite(nil, func(r *http.Request, rec *httptest.ResponseRecorder) {
			if r.Method == http.MethodGet && rec.Code == http.StatusOK {
				body := strings.Replace(rec.Body.String(), `"id":null`, `"id":"m-1"`, 1)
				rec.Body.Reset()
				rec.Body.WriteString(body)
			}
		}), fails: []string{"manifest.delivered"}},
		{name: "manifest without server_version", wrap: onManifest(func(m map[string]any) { delete(m, "server_version") }),
			fails: []string{"manifest.required_fields"}},
		{name: "manifest of another protocol version", wrap: onManifest(func(m map[string]any) {
			m["protocol"].(map[string]any)["manglecp"] = "2025-01-draft"
		}), fails: []string{"manifest.version"}},
		{name: "unknown status", wrap: onManifest(func(m map[string]any) { m["status"] = "running" }),
			fails: []string{"manifest.status"}},
		{name: "no conformance level", wrap: onManifest(func(m map[string]any) {
			delete(m["protocol"].(map[string]any), "conformance_level")
		}), fails: []string{"manifest.conformance_level"}},
		{name: "intent without description", wrap: onManifest(func(m map[string]any) {
			delete(m["intents"].([]any)[0].(map[string]any), "description")
		}), fails: []string{"manifest.intents"}},
		{name: "time formats without rfc3339", wrap: onManifest(func(m map[string]any) {
			m["facts_profile"].(map[string]any)["time_formats"] = []any{"epoch_ms"}
		}), fails: []string{"manifest.time_formats"}},
		{name: "temporal capability as a string", wrap: onManifest(func(m map[string]any) {
			m["capabilities"].(map[string]any)["temporal"] = "yes"
		}), fails: []string{"manifest.capabilities", "manifest.required_fields"}},
		{name: "max_message_bytes below 16 MiB", wrap: onManifest(func(m map[string]any) {
			m["limits"].(map[string]any)["max_message_bytes"] = 1 << 20
		}), fails: []string{"manifest.limits", "errors.message_too_large"}},
		{name: "auth required without schemes", wrap: onManifest(func(m map[string]any) {
			m["auth"] = map[string]any{"required": true, "token_url": nil}
		}), fails: []string{"manifest.auth", "manifest.required_fields"}},
		{name: "extension key without x-", wrap: onManifest(func(m map[string]any) {
			m["extensions"].(map[string]any)["websocket"] = "/manglecp/ws"
		}), fails: []string{"manifest.extensions"}},
		{name: "tool list in the manifest", wrap: onManifest(func(m map[string]any) {
			m["extensions"].(map[string]any)["x-debug"] = map[string]any{"tools": []any{"diagnose_causal_chain"}}
		}), fails: []string{"manifest.no_tool_list"}},
		{name: "predicate schema with too few arg_types", wrap: onManifest(func(m map[string]any) {
			p := m["facts_profile"].(map[string]any)["predicates"].([]any)[0].(map[string]any)
			p["arg_types"] = []any{}
		}), fails: []string{"manifest.facts_profile"}},
		{name: "external predicate without description", wrap: onManifest(func(m map[string]any) {
			e := m["capabilities"].(map[string]any)["external_predicates"].([]any)[0].(map[string]any)
			delete(e, "description")
		}), fails: []string{"manifest.external_predicates"}},

		// Fact encoding.
		{name: "int64 wrapper refused", wrap: refuse(func(req map[string]any) bool {
			raw, _ := json.Marshal(req)
			return strings.Contains(string(raw), `"_type":"int64"`)
		}, protocol.CodeTypeMismatch), fails: []string{"facts.int64"}},
		{name: "named_args advertised but refused", wrap: refuse(func(req map[string]any) bool {
			return anyFact(req, func(f map[string]any) bool { _, ok := f["named_args"]; return ok })
		}, protocol.CodeInvalidFacts), fails: []string{"facts.named_args"}},
		{name: "now as a time refused", wrap: refuse(func(req map[string]any) bool {
			return anyFact(req, func(f map[string]any) bool { t, _ := f["t"].(map[string]any); return t["end"] == "now" })
		}, protocol.CodeInvalidFacts), fails: []string{"facts.temporal"}},
		{name: "provenance changes the selection", wrap: onAnswers(protocol.TypeIntentResponse, func(req, ans map[string]any) {
			if anyFact(req, func(f map[string]any) bool { _, ok := f["source"]; return ok }) {
				p := payloadOf(ans)
				if list, _ := p["macro_tools"].([]any); len(list) > 0 {
					p["macro_tools"] = list[1:]
				}
			}
		}), fails: []string{"facts.provenance"}},

		// Intent evaluation.
		{name: "proof hints nobody asked for", wrap: onAnswers(protocol.TypeIntentResponse, func(req, ans map[string]any) {
			payloadOf(ans)["proof_hints"] = map[string]any{"derivations": []any{}}
		}), fails: []string{"evaluation.response"}},
		{name: "eval_time not echoed", wrap: onAnswers(protocol.TypeIntentResponse, func(req, ans map[string]any) {
			payloadOf(ans)["eval_time_used"] = "2000-01-01T00:00:00Z"
		}), fails: []string{"evaluation.eval_time"}},
		{name: "random macro_ids", wrap: onAnswers(protocol.TypeIntentResponse, func(req, ans map[string]any) {
			for _, t := range tools(ans) {
				t["macro_id"] = fmt.Sprintf("%v-%d", t["macro_id"], macroSeq.Add(1))
			}
		}), fails: []string{"evaluation.determinism"}},
		{name: "no budget in derivation_limit_exceeded", wrap: onErrors(protocol.CodeDerivationLimitExceeded, func(req, ans map[string]any) {
			delete(payloadOf(ans), "details")
		}), fails: []string{"evaluation.gas"}},
		{name: "max_tools_returned ignored", wrap: onRequests(func(req map[string]any) {
			if c, ok := payloadOf(req)["constraints"].(map[string]any); ok {
				delete(c, "max_tools_returned")
			}
		}), fails: []string{"evaluation.max_tools"}},
		{name: "proof hints dropped", wrap: onAnswers(protocol.TypeIntentResponse, func(req, ans map[string]any) {
			delete(payloadOf(ans), "proof_hints")
		}), fails: []string{"evaluation.proof_hints"}},
		{name: "rule coverage with an unknown status", wrap: onAnswers(protocol.TypeIntentResponse, func(req, ans map[string]any) {
			d, _ := payloadOf(ans)["diagnostics"].(map[string]any)
			if c, ok := d["rule_coverage"].(map[string]any); ok {
				c["dormant_details"] = []any{map[string]any{"rule": "r1", "status": "zombie"}}
			}
		}), fails: []string{"evaluation.rule_coverage"}},
		{name: "disclosure_upgrade ignored", wrap: onRequests(func(req map[string]any) {
			var keep []any
			for _, f := range requestFacts(req) {
				if factPred(f) != "disclosure_upgrade" {
					keep = append(keep, f)
				}
			}
			if isType(req, protocol.TypeIntentRequest) {
				setFacts(req, keep)
			}
		}), fails: []string{"evaluation.disclosure_upgrade"}},

		// Macro-tools.
		{name: "full disclosure without safety", wrap: onAnswers(protocol.TypeIntentResponse, func(req, ans map[string]any) {
			for _, t := range tools(ans) {
				if t["disclosure_level"] == "full" {
					delete(t, "safety")
				}
			}
		}), fails: []string{"macro-tools.full"}},
		{name: "input_schema requires an undeclared property", wrap: onAnswers(protocol.TypeIntentResponse, func(req, ans map[string]any) {
			for _, t := range tools(ans) {
				if s, ok := t["input_schema"].(map[string]any); ok {
					s["required"] = []any{"ghost"}
				}
			}
		}), fails: []string{"macro-tools.input_schema"}},
		{name: "condensed disclosure with input_schema", wrap: onAnswers(protocol.TypeIntentResponse, func(req, ans map[string]any) {
			for _, t := range tools(ans) {
				if t["disclosure_level"] == "condensed" {
					t["input_schema"] = map[string]any{"type": "object"}
				}
			}
		}), fails: []string{"macro-tools.condensed"}},
		{name: "minimal disclosure with description", wrap: onAnswers(protocol.TypeIntentResponse, func(req, ans map[string]any) {
			for _, t := range tools(ans) {
				if t["disclosure_level"] == "minimal" {
					t["description"] = "more than a name"
				}
			}
		}), fails: []string{"macro-tools.minimal"}},
		{name: "adaptive disclosure upside down", wrap: onAnswers(protocol.TypeIntentResponse, func(req, ans map[string]any) {
			if pref := requestOption(req, "disclosure_preference"); pref != nil && pref != "adaptive" {
				return
			}
			for _, t := range tools(ans) {
				md, _ := t["metadata"].(map[string]any)
				if fmt.Sprint(md["score"]) == "100" {
					for _, k := range []string{"description", "input_schema", "output_schema", "context_injection", "safety", "validity", "metadata"} {
						delete(t, k)
					}
					t["disclosure_level"] = "minimal"
				}
			}
		}), fails: []string{"macro-tools.adaptive"}},
		{name: "unknown side effect", wrap: onAnswers(protocol.TypeIntentResponse, func(req, ans map[string]any) {
			for _, t := range tools(ans) {
				if s, ok := t["safety"].(map[string]any); ok {
					s["side_effects"] = []any{"teleport"}
				}
			}
		}), fails: []string{"macro-tools.safety"}},
		{name: "context resource without uri", wrap: onAnswers(protocol.TypeIntentResponse, func(req, ans map[string]any) {
			for _, t := range tools(ans) {
				if ci, ok := t["context_injection"].(map[string]any); ok {
					ci["context_resources"] = []any{map[string]any{"relevance": "somewhere"}}
				}
			}
		}), fails: []string{"macro-tools.context_injection"}},
		{name: "validity ends before it starts", wrap: onAnswers(protocol.TypeIntentResponse, func(req, ans map[string]any) {
			for _, t := range tools(ans) {
				if v, ok := t["validity"].(map[string]any); ok {
					v["not_before"], v["expires_at"] = "2026-02-19T14:35:00Z", "2026-02-19T14:30:00Z"
				}
			}
		}), fails: []string{"macro-tools.validity"}},

		// Invocation.
		{name: "result is not an object", wrap: onAnswers(protocol.TypeInvokeResponse, func(req, ans map[string]any) {
			payloadOf(ans)["result"] = "done"
		}), fails: []string{"invocation.response"}},
		{name: "event with an unknown status", wrap: onAnswers(protocol.TypeInvokeResponse, func(req, ans map[string]any) {
			o, _ := payloadOf(ans)["observability"].(map[string]any)
			o["events"] = []any{map[string]any{"action": "x", "status": "ok"}}
		}), fails: []string{"invocation.observability"}},
		{name: "asserted fact without category", wrap: onAnswers(protocol.TypeInvokeResponse, func(req, ans map[string]any) {
			sd, _ := payloadOf(ans)["state_delta"].(map[string]any)
			sd["assert"] = []any{map[string]any{"pred": "diagnosed_error", "args": []any{"r42", "x"}}}
		}), fails: []string{"invocation.state_delta"}},
		{name: "suggested intent without name", wrap: onAnswers(protocol.TypeInvokeResponse, func(req, ans map[string]any) {
			payloadOf(ans)["next"] = map[string]any{"suggested_intents": []any{map[string]any{"description": "go on"}}, "continuation_facts": []any{}}
		}), fails: []string{"invocation.next"}},
		{name: "unknown macro answered with a custom code", wrap: onErrors(protocol.CodeMacroNotFound, func(req, ans map[string]any) {
			payloadOf(ans)["code"] = "x-no_such_macro"
		}), fails: []string{"invocation.macro_not_found"}},
		{name: "schema_errors dropped", wrap: onErrors(protocol.CodeSchemaValidationFailed, func(req, ans map[string]any) {
			delete(payloadOf(ans), "details")
		}), fails: []string{"invocation.schema_validation"}},
		{name: "expired macro-tool answered as unknown", wrap: onErrors(protocol.CodeMacroExpired, func(req, ans map[string]any) {
			payloadOf(ans)["code"] = "macro_not_found"
		}), fails: []string{"invocation.macro_expired"}},

		// Errors.
		{name: "unsupported_version without details", wrap: onErrors(protocol.CodeUnsupportedVersion, func(req, ans map[string]any) {
			delete(payloadOf(ans), "details")
		}), fails: []string{"errors.unsupported_version"}},
		{name: "id invented for unreadable messages", wrap: onAnswers(protocol.TypeError, func(req, ans map[string]any) {
			if ans["id"] == nil {
				ans["id"] = "unknown"
			}
		}), fails: []string{"errors.malformed_json", "errors.missing_id", "errors.id_correlation"}},
		{name: "unknown type answered as malformed", wrap: onErrors(protocol.CodeInvalidType, func(req, ans map[string]any) {
			payloadOf(ans)["code"] = "malformed_message"
		}), fails: []string{"errors.invalid_type"}},
		{name: "fact errors with a custom code", wrap: onAnswers(protocol.TypeError, func(req, ans map[string]any) {
			switch errorCode(ans) {
			case "unknown_predicate", "arity_mismatch", "type_mismatch":
				payloadOf(ans)["code"] = "x-bad_fact"
			}
		}), fails: []string{"errors.unknown_predicate", "errors.arity_mismatch", "errors.type_mismatch"}},
		{name: "violations without suggestion", wrap: onAnswers(protocol.TypeError, func(req, ans map[string]any) {
			for _, v := range violations(ans) {
				delete(v, "suggestion")
			}
		}), fails: []string{"errors.violation_details"}},
		{name: "too many facts accepted", wrap: onRequests(func(req map[string]any) {
			if facts := requestFacts(req); len(facts) > 5000 {
				setFacts(req, facts[:10])
			}
		}), fails: []string{"errors.too_many_facts"}},
		{name: "oversized message answered as malformed", mw: httpRewrite(nil, func(r *http.Request, rec *httptest.ResponseRecorder) {
			if rec.Code == http.StatusRequestEntityTooLarge && strings.Contains(rec.Body.String(), "message_too_large") {
				body := strings.Replace(rec.Body.String(), "message_too_large", "malformed_message", 1)
				rec.Body.Reset()
				rec.Body.WriteString(body)
				rec.Code = http.StatusBadRequest
			}
		}), fails: []string{"errors.message_too_large"}},
		{name: "error without recoverable", wrap: onErrors("", func(req, ans map[string]any) {
			delete(payloadOf(ans), "recoverable")
		}), fails: []string{"errors.envelope"}},
		{name: "unregistered error code", wrap: onErrors(protocol.CodeInvalidType, func(req, ans map[string]any) {
			payloadOf(ans)["code"] = "unknown_type"
		}), fails: []string{"errors.registered_codes", "errors.invalid_type"}},
		{name: "recoverable flipped", wrap: onErrors("", func(req, ans map[string]any) {
			p := payloadOf(ans)
			p["recoverable"] = !(p["recoverable"] == true)
		}), fails: []string{"errors.recoverable"}},
		{name: "wrong HTTP status for errors", mw: httpRewrite(nil, func(r *http.Request, rec *httptest.ResponseRecorder) {
			if rec.Code >= 400 && rec.Code < 500 {
				rec.Code = http.StatusInternalServerError
			}
		}), fails: []string{"errors.http_status"}},
		{name: "id not echoed", wrap: func(srv *manglecp.Server) *broken {
			return &broken{srv: srv, out: func(req, ans map[string]any) { ans["id"] = nil }}
		}, fails: []string{"errors.id_correlation"}},

		// Security.
		{name: "reserved predicate accepted", wrap: onRequests(func(req map[string]any) {
			var keep []any
			for _, f := range requestFacts(req) {
				if !strings.HasPrefix(factPred(f), "_manglecp_") {
					keep = append(keep, f)
				}
			}
			if isType(req, protocol.TypeIntentRequest) {
				setFacts(req, keep)
			}
		}), fails: []string{"security.reserved_predicate"}},
		{name: "credentials not checked", opts: withAuth, token: testToken, wrap: func(srv *manglecp.Server) *broken {
			return &broken{srv: srv, inbound: func(in *protocol.Inbound) {
				in.Credentials = &protocol.Credentials{Scheme: protocol.SchemeBearer, Token: testToken}
			}}
		}, fails: []string{"security.auth_required", "security.auth_invalid"}},
		{name: "CORS wildcard with auth on", opts: withAuth, token: testToken, mw: httpRewrite(nil, func(r *http.Request, rec *httptest.ResponseRecorder) {
			if r.Header.Get("Origin") != "" {
				rec.Header().Set("Access-Control-Allow-Origin", "*")
			}
		}), fails: []string{"security.cors"}},
		{name: "confirmation not enforced", wrap: func(srv *manglecp.Server) *broken {
			return &broken{srv: srv, in: func(req map[string]any) {
				if isType(req, protocol.TypeInvokeRequest) {
					p := payloadOf(req)
					p["confirmation_token"] = srv.ConfirmationToken(fmt.Sprint(p["macro_id"]))
				}
			}}
		}, fails: []string{"security.confirmation"}},
		{name: "proof hints quote a rule", wrap: onAnswers(protocol.TypeIntentResponse, func(req, ans map[string]any) {
			ph, ok := payloadOf(ans)["proof_hints"].(map[string]any)
			if !ok {
				return
			}
			for _, d := range ph["derivations"].([]any) {
				d.(map[string]any)["rule_chain"] = []any{"selected(T) :- mandatory_for_intent(I, T)."}
			}
		}), fails: []string{"security.proof_hints"}},
		{name: "stack trace in errors", wrap: onErrors("", func(req, ans map[string]any) {
			p := payloadOf(ans)
			p["message"] = fmt.Sprint(p["message"], "\ngoroutine 7 [running]:\nmain.handle(...)\n\t/src/server/handle.go:42")
		}), fails: []string{"security.no_internal_details"}},

		// Transport.
		{name: "manifest as text/plain", mw: httpRewrite(nil, func(r *http.Request, rec *httptest.ResponseRecorder) {
			if r.Method == http.MethodGet {
				rec.Header().Set("Content-Type", "text/plain")
			}
		}), fails: []string{"transport.http.well_known"}},
		{name: "no caching headers", mw: httpRewrite(func(r *http.Request) { r.Header.Del("If-None-Match") },
			func(r *http.Request, rec *httptest.ResponseRecorder) {
				rec.Header().Del("Cache-Control")
				rec.Header().Del("ETag")
			}), fails: []string{"transport.http.caching"}},
		{name: "endpoints that do not exist", wrap: onManifest(func(m map[string]any) {
			m["endpoints"] = map[string]any{"intent_eval": "/nowhere/evaluate", "macro_invoke": "/nowhere/invoke"}
		}), fails: []string{"transport.http.endpoints"}},
		{name: "answers of another version", wrap: onAnswers(protocol.TypeIntentResponse, func(req, ans map[string]any) {
			ans["manglecp"] = "2026-01-draft"
		}), fails: []string{"transport.envelope"}},
		{name: "answers as text/plain", mw: httpRewrite(nil, func(r *http.Request, rec *httptest.ResponseRecorder) {
			if r.Method == http.MethodPost {
				rec.Header().Set("Content-Type", "text/plain; charset=utf-8")
			}
		}), fails: []string{"transport.http.json"}},
		{name: "cancel ignored", over: "websocket", opts: roomyLimits, slow: quadraticSlow(2000), wrap: func(srv *manglecp.Server) *broken {
			return &broken{srv: srv, ctx: context.WithoutCancel}
		}, fails: []string{"transport.session.cancel"}},
		{name: "state shared between concurrent requests", over: "websocket", wrap: sharedEvalTime,
			fails: []string{"transport.session.pipelining"}},
		{name: "binary frames", over: "websocket", target: func(t *testing.T, base string) string { return binaryFrames(t, wsURL(base)) },
			fails: []string{"transport.ws.frames"}},
		{name: "log line on stdout", target: func(t *testing.T, _ string) string { return helperTarget(t, "noise") },
			fails: []string{"transport.stdio.stdout"}},
		{name: "manifest not first", target: func(t *testing.T, _ string) string { return helperTarget(t, "late-manifest") },
			fails: []string{"transport.session.manifest_first"}},
	}
}

// sharedEvalTime keeps the eval_time_used of the latest answer in one
// variable shared by all requests, and answers each intent request with
// the one before it: answers report each other's eval_time_used. (A
// server whose concurrent requests share state does the same, but only
// when they overlap; this one does it whatever the timing.)
func sharedEvalTime(srv *manglecp.Server) *broken {
	var mu sync.Mutex
	last := ""
	return &broken{srv: srv,
		out: func(req, ans map[string]any) {
			if isType(ans, protocol.TypeIntentResponse) {
				mu.Lock()
				own, _ := payloadOf(ans)["eval_time_used"].(string)
				if last != "" {
					payloadOf(ans)["eval_time_used"] = last
				}
				if own != "" {
					last = own
				}
				mu.Unlock()
			}
		}}
}

// TestBreakages runs the suite against deliberately broken servers: each
// breakage must make its checks FAIL.
func TestBreakages(t *testing.T) {
	for _, b := range breakages() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, b.opts)
			var h transport.Handler = srv
			if b.wrap != nil {
				h = b.wrap(srv)
			}
			base := serveHTTP(t, h, nil, b.mw)
			target := base
			switch {
			case b.target != nil:
				target = b.target(t, base)
			case b.over == "websocket":
				target = wsURL(base)
			}
			rep := run(t, target, &conformance.Options{Fixture: slowerFixture(t, b.slow), Token: b.token, RequestTimeout: 10 * time.Second,
				Checks: scope(b.fails)})
			var failed []string
			for _, c := range rep.Checks {
				if c.Status == conformance.Fail {
					failed = append(failed, c.ID)
				}
			}
			for _, id := range b.fails {
				c := rep.Check(id)
				if c == nil {
					t.Errorf("the report has no check %s", id)
					continue
				}
				if c.Status != conformance.Fail {
					t.Errorf("%s is %s (%s), want FAIL", id, c.Status, c.Detail)
				}
			}
			if t.Failed() {
				t.Logf("failed checks: %v\n%s", failed, rep.Format())
			}
		})
	}
}

// heavy are the checks that cost most (100 evaluations, 10001 facts, a
// 16 MiB message, a slow evaluation); a breakage runs them only when it
// targets them.
var heavy = map[string]bool{"evaluation.determinism": true, "errors.too_many_facts": true,
	"errors.message_too_large": true, "transport.session.cancel": true}

// scope is what a breakage runs: every check of the categories of the
// checks it must fail (so that the checks judging all answers have
// answers to judge), without the heavy checks it does not target.
func scope(fails []string) []string {
	cats := map[string]bool{}
	want := map[string]bool{}
	for _, id := range fails {
		cats[strings.SplitN(id, ".", 2)[0]] = true
		want[id] = true
	}
	var out []string
	for _, c := range conformance.Catalogue() {
		if cats[c.Category] && (!heavy[c.ID] || want[c.ID]) {
			out = append(out, c.ID)
		}
	}
	return out
}

// TestBreakageScopesPassUnbroken runs every breakage's scope against the
// unbroken server over the same transport: nothing may fail, so a FAIL
// under a breakage is the breakage's doing.
func TestBreakageScopesPassUnbroken(t *testing.T) {
	srv := newServer(t, nil)
	base := serveHTTP(t, srv, nil, nil)
	authSrv := newServer(t, withAuth)
	authBase := serveHTTP(t, authSrv, nil, nil)
	roomy := serveHTTP(t, newServer(t, roomyLimits), nil, nil)
	done := map[string]bool{}
	for _, b := range breakages() {
		target, token := base, ""
		switch {
		case b.slow != nil:
			target = roomy
		case b.opts != nil:
			target, token = authBase, testToken
		}
		switch {
		case b.target != nil && b.over != "websocket":
			target = helperTarget(t, "ok")
		case b.over == "websocket":
			target = wsURL(target)
		}
		checks := scope(b.fails)
		key := target + " " + strings.Join(checks, ",")
		if done[key] {
			continue
		}
		done[key] = true
		rep := run(t, target, &conformance.Options{Fixture: slowerFixture(t, b.slow), Token: token, Checks: checks})
		for _, c := range rep.Failed() {
			t.Errorf("%s (scope of %q): %s FAILs on the unbroken server: %s", target, b.name, c.ID, c.Detail)
		}
	}
}

// TestEveryCheckCanFail: each check of the catalogue is made to FAIL by
// at least one breakage.
func TestEveryCheckCanFail(t *testing.T) {
	covered := map[string]bool{}
	for _, b := range breakages() {
		for _, id := range b.fails {
			covered[id] = true
		}
	}
	var missing []string
	for _, c := range conformance.Catalogue() {
		if !covered[c.ID] {
			missing = append(missing, c.ID)
		}
		delete(covered, c.ID)
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("no breakage makes these checks fail: %v", missing)
	}
	for id := range covered {
		t.Errorf("a breakage names %s, which is not in the catalogue", id)
	}
}
