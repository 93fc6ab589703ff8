package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/manglecp/manglecp/protocol"
)

func checkReservedPredicate(r *runner) outcome {
	c := r.violation(protocol.CodeReservedPredicate)
	out := judgeViolation(c)
	if out.status != Pass {
		return out
	}
	if e := c.rep.errorInfo(); e.Code == string(protocol.CodeReservedPredicate) && e.Recoverable != nil && *e.Recoverable {
		return fail("reserved_predicate is marked recoverable; the registry says it is not")
	}
	return out
}

// authOff returns a SKIP outcome when the server requires no
// authentication, or the transport is stdio (local trust, Spec 02 4.3).
func (r *runner) authOff() *outcome {
	if req, _ := asBool(path(r.mmap, "auth", "required")); !req {
		o := skip("auth.required is false: the server accepts anonymous requests")
		return &o
	}
	if r.w.kind() == "stdio" {
		o := skip("stdio is local trust (Spec 02 4.3): the subprocess gets its credentials from its parent")
		return &o
	}
	return nil
}

// withoutCredentials sends the base intent request over HTTP with header
// in place of the connection's credentials; on a session transport it
// opens a session without credentials and sends typ and payload on it
// (nil payload: the base intent request).
func (r *runner) withoutCredentials(header http.Header, typ protocol.MessageType, payload any) (*reply, *outcome) {
	base, _ := r.baseReq()
	if w, ok := r.w.(*httpWire); ok {
		id := r.newID()
		ctx, cancel := r.requestCtx()
		rep := w.post(ctx, w.evalURL, encode(protocol.TypeIntentRequest, id, base.payload()), header)
		cancel()
		r.record(protocol.TypeIntentRequest, id, idEcho, w, rep)
		return rep, nil
	}
	nw, err := r.dial("")
	if err != nil {
		o := fail("opening a session without credentials: %v", err)
		return nil, &o
	}
	if payload == nil {
		typ, payload = protocol.TypeIntentRequest, base.payload()
	}
	return r.sendOn(nw, typ, payload), nil
}

func checkAuthRequired(r *runner) outcome {
	if o := r.authOff(); o != nil {
		return *o
	}
	rep, o := r.withoutCredentials(http.Header{"Authorization": nil, "X-Manglecp-Api-Key": nil}, "", nil)
	if o != nil {
		return *o
	}
	if _, problem := wantCode(rep, protocol.CodeAuthRequired); problem != "" {
		return fail("a request without credentials: %s", problem)
	}
	return pass("auth_required")
}

func checkAuthInvalid(r *runner) outcome {
	if o := r.authOff(); o != nil {
		return *o
	}
	const wrong = "conformance-wrong-token-0000000000"
	rep, o := r.withoutCredentials(http.Header{"Authorization": {"Bearer " + wrong}},
		protocol.TypeAuthenticate, map[string]any{"scheme": "bearer", "token": wrong})
	if o != nil {
		return *o
	}
	if _, problem := wantCode(rep, protocol.CodeAuthInvalid); problem != "" {
		return fail("a wrong token: %s", problem)
	}
	return pass("auth_invalid")
}

func checkCORS(r *runner) outcome {
	if req, _ := asBool(path(r.mmap, "auth", "required")); !req {
		return skip("auth.required is false: a wildcard origin is allowed")
	}
	w := r.w.(*httpWire)
	const origin = "https://conformance.invalid"
	var f failures
	ctx, cancel := r.requestCtx()
	defer cancel()
	get := w.get(ctx, http.Header{"Origin": {origin}})
	if get.Err != nil {
		return fail("GET the manifest with an Origin: %v", get.Err)
	}
	if a := get.Header.Get("Access-Control-Allow-Origin"); a == "*" {
		f.add("the manifest answers Access-Control-Allow-Origin: * while authentication is required")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodOptions, w.evalURL, nil)
	if err != nil {
		return fail("%v", err)
	}
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", http.MethodPost)
	req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
	if resp, err := w.client.Do(req); err == nil {
		resp.Body.Close()
		if resp.Header.Get("Access-Control-Allow-Origin") == "*" {
			f.add("the preflight of %s answers Access-Control-Allow-Origin: * while authentication is required", w.evalURL)
		}
	}
	return f.result("no wildcard origin")
}

func checkConfirmation(r *runner) outcome {
	if r.fixture == nil || r.fixture.Confirmation == nil {
		return skip("needs the fixture's confirmation part (a tool that requires user confirmation)")
	}
	fc := r.fixture.Confirmation
	m := r.mainReq()
	if m == nil {
		return r.noMain()
	}
	t := findTool(m.tools(), fc.Tool)
	if t == nil {
		return fail("the fixture names %s, but %s selects %s", fc.Tool, m.desc, toolNames(m.tools()))
	}
	var f failures
	if t.Safety == nil || !t.Safety.RequiresUserConfirmation {
		f.add("%s is not marked safety.requires_user_confirmation", t.Name)
	}
	rep := r.send(protocol.TypeInvokeRequest, invokePayload(t.MacroID, fc.Args, fc.EvalTime, ""))
	if _, problem := wantCode(rep, protocol.CodeConfirmationRequired); problem != "" {
		f.add("invoking %s without confirmation_token: %s", t.Name, problem)
	}
	rep = r.send(protocol.TypeInvokeRequest, invokePayload(t.MacroID, fc.Args, fc.EvalTime, "conformance-invalid-confirmation-token"))
	if _, problem := wantCode(rep, protocol.CodeConfirmationInvalid); problem != "" {
		f.add("invoking %s with an invalid confirmation_token: %s", t.Name, problem)
	}
	return f.result("%s: confirmation_required without a token, confirmation_invalid with a bad one", t.Name)
}

// leakMarkers are strings an error must not contain: a Go stack trace, a
// Go source position, a panic (Spec 09 section 2, seed 001).
var leakMarkers = []string{"goroutine ", ".go:", "panic"}

// proofLeaks are patterns proof hints must not contain: rule source, rule
// files, file paths and stack traces (Spec 09 section 5.5).
var proofLeaks = []*regexp.Regexp{
	regexp.MustCompile(`:-`),
	regexp.MustCompile(`\.mg\b`),
	regexp.MustCompile(`\.go:\d+`),
	regexp.MustCompile(`goroutine \d+`),
	regexp.MustCompile(`(^|[\s"'(])/(home|etc|usr|var|tmp|root|opt|srv)/`),
	regexp.MustCompile(`[A-Za-z]:\\\\`),
}

func checkNoLeaks(r *runner) outcome {
	return r.eachError("errors scanned", func(f *failures, x *exchange) {
		var payload string
		if x.r.Env != nil {
			payload = string(x.r.Env.Payload)
		}
		// Decode escapes so "\u002e" hides nothing.
		var v any
		if json.Unmarshal([]byte(payload), &v) == nil {
			payload = fmt.Sprint(v)
		}
		for _, m := range leakMarkers {
			if strings.Contains(payload, m) {
				f.add("%s: error %s contains %q: %s", x.check, x.r.errorInfo().Code, m, clip([]byte(payload), 160))
				break
			}
		}
	})
}

func checkProofHintsOpaque(r *runner) outcome {
	p, m, why := r.proofHints()
	if p == nil {
		if m == nil {
			return r.noMain()
		}
		return skip("%s", why)
	}
	ph, present := p["proof_hints"]
	if !present || ph == nil {
		return skip("no proof hints (see evaluation.proof_hints)")
	}
	var strs []string
	collectStrings(ph, &strs)
	var f failures
	for _, s := range strs {
		for _, re := range proofLeaks {
			if re.MatchString(s) {
				f.add("proof hints contain %q (pattern %s)", clip([]byte(s), 120), re)
				break
			}
		}
	}
	return f.result("%d strings in proof hints scanned", len(strs))
}

// collectStrings gathers every string and object key in v.
func collectStrings(v any, out *[]string) {
	switch x := v.(type) {
	case string:
		*out = append(*out, x)
	case []any:
		for _, e := range x {
			collectStrings(e, out)
		}
	case map[string]any:
		for k, e := range x {
			*out = append(*out, k)
			collectStrings(e, out)
		}
	}
}
