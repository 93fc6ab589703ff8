package manglecp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/protocol"
)

// TestDeterminism is the determinism test of Spec 10 section 6.2: 100
// identical requests give the same macro_ids, disclosure levels and scores
// (and, here, byte-identical payloads apart from eval_duration_ms).
func TestDeterminism(t *testing.T) {
	h := newHarness(t, nil, nil)
	req := diagnoseRequest()
	delete(req, "options") // adaptive disclosure: levels depend on scores
	var first []byte
	for i := range 100 {
		p := h.evaluate("det", req).intentResponse(t)
		if len(p.MacroTools) == 0 {
			t.Fatal("no macro-tools")
		}
		p.EvalDurationMS = 0
		raw, _ := json.Marshal(p)
		if i == 0 {
			first = raw
			continue
		}
		if string(raw) != string(first) {
			t.Fatalf("run %d differs:\n%s\nvs\n%s", i, raw, first)
		}
	}
}

// TestEveryToolSucceeds invokes every default-domain macro-tool with
// arguments generated from its input_schema: schema-valid arguments must
// be meaningful, so every invocation succeeds.
func TestEveryToolSucceeds(t *testing.T) {
	h := newHarness(t, nil, nil)
	automate := map[string]any{
		"intent": map[string]any{"name": "automate"},
		"facts": []any{
			map[string]any{"pred": "current_url", "args": []any{"https://app.example.com/login"}},
			map[string]any{"pred": "automation_goal", "args": []any{"log in"}},
			map[string]any{"pred": "interactive_element", "args": []any{"email", "input", "E-mail"}},
			map[string]any{"pred": "interactive_element", "args": []any{"submit", "button", "Sign in"}},
		},
		"options": map[string]any{"disclosure_preference": "full"},
	}
	observe := diagnoseRequest()
	observe["intent"] = map[string]any{"name": "observe"}
	seen := map[string]bool{}
	for _, req := range []map[string]any{diagnoseRequest(), observe, automate} {
		resp := h.evaluate("e", req).intentResponse(t)
		for _, m := range resp.MacroTools {
			args := argsFromSchema(t, m.InputSchema)
			payload := map[string]any{"macro_id": m.MacroID, "args": args}
			if m.Safety.RequiresUserConfirmation {
				payload["confirmation_token"] = h.srv.ConfirmationToken(m.MacroID)
			}
			out := h.invoke("inv-"+m.Name, payload).invokeResponse(t)
			if len(out.Result) == 0 || out.Observability.Summary == "" || len(out.Observability.Events) == 0 {
				t.Errorf("%s: empty result or observability: %+v", m.Name, out)
			}
			for _, f := range out.StateDelta.Assert {
				if f.Category == "" || f.Source == nil || f.Source.SourceType == "" {
					t.Errorf("%s: asserted fact without category or provenance: %s", m.Name, mustJSON(f))
				}
			}
			seen[m.Name] = true
		}
	}
	for _, name := range []string{"summarize_observation", "inspect_console_errors", "diagnose_causal_chain", "write_diagnosis_report", "plan_automation"} {
		if !seen[name] {
			t.Errorf("tool %s was never returned", name)
		}
	}
}

// argsFromSchema picks, for every property, the first enum value, the
// default or a value of the declared type.
func argsFromSchema(t *testing.T, schema map[string]any) map[string]any {
	t.Helper()
	args := map[string]any{}
	props, _ := schema["properties"].(map[string]any)
	for name, p := range props {
		prop := p.(map[string]any)
		switch {
		case prop["enum"] != nil:
			args[name] = prop["enum"].([]any)[0]
		case prop["default"] != nil:
			args[name] = prop["default"]
		case prop["type"] == "boolean":
			args[name] = true
		case prop["type"] == "string":
			args[name] = "generated"
		default:
			t.Fatalf("no generator for %s: %v", name, prop)
		}
	}
	if args["action"] == "click" { // plan_automation: the first element is an input
		args["action"], args["value"] = "fill", "user@example.com"
	}
	return args
}

func TestWriteReportNeedsConfirmationOnce(t *testing.T) {
	dir := t.TempDir()
	d := browser.Domain(browser.Config{ReportDir: dir})
	h := newHarness(t, &d, nil)
	m := tool(t, h.evaluate("e", diagnoseRequest()).intentResponse(t), "write_diagnosis_report")
	if !m.Safety.RequiresUserConfirmation || !reflect.DeepEqual(m.Safety.SideEffects, []string{"filesystem"}) {
		t.Fatalf("safety %+v", m.Safety)
	}
	token := h.srv.ConfirmationToken(m.MacroID)
	payload := map[string]any{"macro_id": m.MacroID, "args": map[string]any{"request_id": "r42", "title": "Users API"}, "confirmation_token": token}
	out := h.invoke("w1", payload).invokeResponse(t)
	name, _ := out.Result["report"].(string)
	body, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), "# Users API") || !strings.Contains(string(body), "returned HTTP 404") {
		t.Errorf("report:\n%s", body)
	}
	if e := h.invoke("w2", payload).errorPayload(t); e.Code != protocol.CodeConfirmationInvalid || !strings.Contains(e.Message, "already used") {
		t.Errorf("replayed token: %+v", e)
	}
	expired := protocol.ConfirmationToken([]byte("test confirmation key"), m.MacroID, fixedNow.Add(-time.Second))
	payload["confirmation_token"] = expired
	if e := h.invoke("w3", payload).errorPayload(t); e.Code != protocol.CodeConfirmationInvalid || !strings.Contains(e.Message, "expired") {
		t.Errorf("expired token: %+v", e)
	}
}

func TestWarnings(t *testing.T) {
	h := newHarness(t, nil, nil)
	req := diagnoseRequest()
	req["constraints"] = map[string]any{"max_facts_created": 1 << 40, "max_tools_returned": 1}
	resp := h.evaluate("w", req).intentResponse(t)
	codes := map[protocol.WarningCode]bool{}
	for _, w := range resp.Warnings {
		codes[w.Code] = true
	}
	if !codes[protocol.WarnConstraintClamped] || !codes[protocol.WarnToolsTruncated] || len(resp.MacroTools) != 1 {
		t.Errorf("warnings %s, %d tools", mustJSON(resp.Warnings), len(resp.MacroTools))
	}
	req = diagnoseRequest()
	req["intent"] = map[string]any{"name": "not_declared"}
	delete(req, "eval_time")
	resp = h.evaluate("w2", req).intentResponse(t)
	codes = map[protocol.WarningCode]bool{}
	for _, w := range resp.Warnings {
		codes[w.Code] = true
	}
	if !codes[protocol.WarnUnknownIntent] || !codes[protocol.WarnEvalTimeChosen] || len(resp.MacroTools) != 0 {
		t.Errorf("warnings %s, tools %d", mustJSON(resp.Warnings), len(resp.MacroTools))
	}
	if !resp.EvalTimeUsed.Equal(fixedNow) {
		t.Errorf("eval_time_used %v, want the server clock %v", resp.EvalTimeUsed, fixedNow)
	}
}

// TestDisclosureFieldPresence checks the fields of each level (Spec 06
// section 2.2) on the raw JSON.
func TestDisclosureFieldPresence(t *testing.T) {
	h := newHarness(t, nil, func(o *manglecp.Options) { o.Disclosure = manglecp.Disclosure{Full: 100, Condensed: 70, Minimal: 50} })
	req := diagnoseRequest()
	delete(req, "options")
	r := h.evaluate("a", req)
	var p struct {
		MacroTools []map[string]json.RawMessage `json:"macro_tools"`
	}
	_ = json.Unmarshal(r.env.Payload, &p)
	want := map[string][]string{
		protocol.DisclosureFull:      {"macro_id", "name", "description", "disclosure_level", "input_schema", "safety", "metadata"},
		protocol.DisclosureCondensed: {"macro_id", "name", "description", "disclosure_level", "metadata"},
		protocol.DisclosureMinimal:   {"macro_id", "name", "disclosure_level"},
	}
	levels := map[string]bool{}
	for _, m := range p.MacroTools {
		var level string
		_ = json.Unmarshal(m["disclosure_level"], &level)
		levels[level] = true
		allowed := map[string]bool{}
		for _, f := range want[level] {
			allowed[f] = true
			if _, ok := m[f]; !ok && f != "description" {
				t.Errorf("%s tool lacks %s", level, f)
			}
		}
		if level == protocol.DisclosureFull {
			allowed["context_injection"], allowed["output_schema"], allowed["validity"] = true, true, true
		}
		for f := range m {
			if !allowed[f] {
				t.Errorf("%s tool has %s", level, f)
			}
		}
	}
	if !levels[protocol.DisclosureFull] || !levels[protocol.DisclosureMinimal] {
		t.Errorf("levels %v: want full (score 100) and minimal (score 60 with thresholds 100/70/50)", levels)
	}
}

func TestMacroCacheBounds(t *testing.T) {
	var now atomic.Int64
	now.Store(fixedNow.UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	h := newHarness(t, nil, func(o *manglecp.Options) { o.Now = clock; o.MacroCacheBytes = 16 << 10 })
	first := tool(t, h.evaluate("e1", diagnoseRequest()).intentResponse(t), "diagnose_causal_chain")
	args := map[string]any{"macro_id": first.MacroID, "args": map[string]any{"request_id": "r42"}}
	h.invoke("i1", args).invokeResponse(t)

	t.Run("ttl", func(t *testing.T) {
		now.Add(int64(5*time.Minute + time.Second))
		if e := h.invoke("i2", args).errorPayload(t); e.Code != protocol.CodeMacroNotFound {
			t.Errorf("after 5 minutes: %s", e.Code)
		}
	})
	t.Run("memory bound", func(t *testing.T) {
		again := tool(t, h.evaluate("e2", diagnoseRequest()).intentResponse(t), "diagnose_causal_chain")
		args["macro_id"] = again.MacroID
		for i := range 20 { // different facts: different macro-tools, evicting the first
			req := diagnoseRequest()
			req["facts"] = append(diagnoseFacts(), map[string]any{"pred": "current_url", "args": []any{strings.Repeat("x", 200) + string(rune('a'+i))}})
			h.evaluate("fill", req).intentResponse(t)
		}
		if e := h.invoke("i3", args).errorPayload(t); e.Code != protocol.CodeMacroNotFound {
			t.Errorf("after eviction: %s", e.Code)
		}
	})
}

func TestTwoServersShareNothing(t *testing.T) {
	a, b := newHarness(t, nil, nil), newHarness(t, nil, nil)
	m := tool(t, a.evaluate("e", diagnoseRequest()).intentResponse(t), "diagnose_causal_chain")
	if e := b.invoke("i", map[string]any{"macro_id": m.MacroID, "args": map[string]any{"request_id": "r42"}}).errorPayload(t); e.Code != protocol.CodeMacroNotFound {
		t.Errorf("macro of server a found on server b: %s", e.Code)
	}
	a.srv.Drain()
	if b.srv.Status() != protocol.StatusReady {
		t.Error("draining a changed b")
	}
}

func TestAuth(t *testing.T) {
	token := "correct-token-0123456789"
	h := newHarness(t, nil, func(o *manglecp.Options) { o.AuthTokens = []string{token} })
	req, _ := http.NewRequest(http.MethodGet, h.http.URL+"/.well-known/manglecp/manifest.json", nil)
	r := h.do(req)
	var m protocol.Manifest
	_ = json.Unmarshal(r.env.Payload, &m)
	if r.status != http.StatusOK || !m.Auth.Required || len(m.Auth.Schemes) != 2 {
		t.Fatalf("manifest without auth: %d %+v", r.status, m.Auth)
	}
	body := envelope(t, protocol.TypeIntentRequest, "ok", diagnoseRequest())
	for _, hdr := range []map[string]string{{"Authorization": "Bearer " + token}, {"X-MangleCP-API-Key": token}} {
		if r := h.post("/manglecp/evaluate", body, hdr); r.status != http.StatusOK {
			t.Errorf("%v: %s", hdr, r.raw)
		}
	}
	if strings.Contains(h.logs.String(), token) {
		t.Error("the token was logged")
	}
}

func TestStrictPayload(t *testing.T) {
	h := newHarness(t, nil, nil)
	req := diagnoseRequest()
	req["surprise"] = true
	e := h.evaluate("s", req).errorPayload(t)
	if e.Code != protocol.CodeMalformedMessage || e.Details.Field != "surprise" {
		t.Errorf("%+v", e)
	}
}

func TestStartupFailsLoudly(t *testing.T) {
	run := manglecp.ActionSpec{Run: func(context.Context, *manglecp.Call) (*manglecp.Outcome, error) { return nil, nil }}
	for _, tc := range []struct {
		name    string
		files   fstest.MapFS
		actions map[string]manglecp.ActionSpec
		want    []string
	}{
		{"syntax error", fstest.MapFS{"domain/a.mg": {Data: []byte("tool(\"x\").\nbroken(:-.\n")}}, nil, []string{"mine/domain/a.mg:2"}},
		// A missing action is named at the tool_action fact asking for it.
		{"unregistered action", fstest.MapFS{"domain/a.mg": {Data: []byte("tool(\"x\").\ntool_action(\"x\", \"nowhere\").\n")}}, nil,
			[]string{"mine/domain/a.mg:2: tool_action(\"x\", \"nowhere\"): the domain registers no action \"nowhere\""}},
		{"one of two actions missing", fstest.MapFS{
			"domain/a.mg": {Data: []byte("tool(\"x\").\ntool_action(\"x\", \"run\").\n")},
			"domain/b.mg": {Data: []byte("# the second tool\ntool(\"y\").\n\ntool_action(\"y\", \"other\").\n")},
		}, map[string]manglecp.ActionSpec{"run": run}, []string{"mine/domain/b.mg:4: tool_action(\"y\", \"other\")", "registers no action \"other\""}},
		{"kernel predicate", fstest.MapFS{"domain/a.mg": {Data: []byte("tool(\"x\").\nintent(\"observe\").\n")}}, nil, []string{"mine/domain/a.mg:2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := manglecp.NewServer(manglecp.Domain{ID: "x", Rules: tc.files, RulesName: "mine", Actions: tc.actions}, nil)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want it to name %q", err, w)
				}
			}
			if err != nil && strings.Contains(err.Error(), "\"run\"") {
				t.Errorf("error %v names a registered action", err)
			}
		})
	}
}

func TestDisclosureUpgradeAndBudget(t *testing.T) {
	h := newHarness(t, nil, nil)
	req := diagnoseRequest()
	delete(req, "options")
	base := h.evaluate("a", req).intentResponse(t)
	report := tool(t, base, "write_diagnosis_report")
	if report.DisclosureLevel != protocol.DisclosureCondensed {
		t.Fatalf("score 60 should be condensed: %s", report.DisclosureLevel)
	}
	t.Run("upgrade", func(t *testing.T) {
		up := diagnoseRequest()
		delete(up, "options")
		up["facts"] = append(diagnoseFacts(), map[string]any{"pred": "disclosure_upgrade", "args": []any{report.MacroID}})
		got := tool(t, h.evaluate("b", up).intentResponse(t), "write_diagnosis_report")
		if got.MacroID != report.MacroID || got.DisclosureLevel != protocol.DisclosureFull || got.InputSchema == nil {
			t.Errorf("upgraded tool %s", mustJSON(got))
		}
	})
	t.Run("budget", func(t *testing.T) {
		full := h.evaluate("c", diagnoseRequest()).intentResponse(t)
		fullSize := len(mustJSON(full.MacroTools)) / 4
		for _, budget := range []int{fullSize, fullSize * 2 / 3, fullSize / 3, 40} {
			r := diagnoseRequest()
			r["constraints"] = map[string]any{"max_tokens_budget": budget}
			resp := h.evaluate("d", r).intentResponse(t)
			size := len(mustJSON(resp.MacroTools)) / 4
			over := false
			for _, w := range resp.Warnings {
				over = over || w.Code == protocol.WarnTokenBudgetExceeded
			}
			if size > budget+len(resp.MacroTools) && !over { // rounding: one token per tool
				t.Errorf("budget %d: %d tokens and no warning", budget, size)
			}
			// The highest-scored tools keep the most detail: levels never increase down the list.
			rank := map[string]int{protocol.DisclosureFull: 2, protocol.DisclosureCondensed: 1, protocol.DisclosureMinimal: 0}
			for i := 1; i < len(resp.MacroTools); i++ {
				if rank[resp.MacroTools[i].DisclosureLevel] > rank[resp.MacroTools[i-1].DisclosureLevel] {
					t.Errorf("budget %d: %s demoted before a lower-scored tool", budget, resp.MacroTools[i-1].Name)
				}
			}
		}
	})
}

func TestSkillsAndResources(t *testing.T) {
	h := newHarness(t, nil, nil)
	resp := h.evaluate("s", diagnoseRequest()).intentResponse(t)
	chain := tool(t, resp, "diagnose_causal_chain")
	ci := chain.ContextInjection
	if ci == nil || len(ci.Skills) != 1 || !ci.Skills[0].Inline || ci.Skills[0].Content == "" || len(ci.ContextResources) != 2 || *ci.ContextResources[0].Priority != 90 {
		t.Fatalf("context injection %s", mustJSON(ci))
	}
	report := tool(t, resp, "write_diagnosis_report")
	var referenced string
	for _, s := range report.ContextInjection.Skills {
		if !s.Inline {
			referenced = s.SkillID
		}
	}
	if referenced == "" || len(resp.RequiredSkills) != 2 {
		t.Fatalf("skills %s, required %s", mustJSON(report.ContextInjection), mustJSON(resp.RequiredSkills))
	}
	req, _ := http.NewRequest(http.MethodGet, h.http.URL+"/manglecp/skills/"+referenced, nil)
	res, err := h.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var sk protocol.Skill
	_ = json.NewDecoder(res.Body).Decode(&sk)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || sk.SkillID != referenced || sk.Content == "" {
		t.Errorf("GET skill: %d %+v", res.StatusCode, sk)
	}
	// Without a failure nothing proves the causal-chain skill necessary.
	observe := map[string]any{"intent": map[string]any{"name": "observe"}, "facts": []any{map[string]any{"pred": "current_url", "args": []any{"https://x"}}}}
	if r := h.evaluate("o", observe).intentResponse(t); len(r.RequiredSkills) != 0 {
		t.Errorf("skills injected without a rule proving them: %s", mustJSON(r.RequiredSkills))
	}
}

// TestIdentities: policy rules see caller/1 and caller_permission/1 and
// decide which intents an identity may use; a macro-tool can only be
// invoked by the identity it was synthesized for.
func TestIdentities(t *testing.T) {
	h := newHarness(t, nil, func(o *manglecp.Options) {
		o.Identities = []manglecp.Identity{
			{Name: "observer", Token: "observer-token-0123456789", Permissions: []string{"intent:observe"}},
			{Name: "admin", Token: "admin-token-0123456789abc", Permissions: []string{"*"}},
		}
	})
	as := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }
	observe := diagnoseRequest()
	observe["intent"] = map[string]any{"name": "observe"}
	if r := h.post("/manglecp/evaluate", envelope(t, protocol.TypeIntentRequest, "o", observe), as("observer-token-0123456789")); r.status != http.StatusOK {
		t.Fatalf("observer observing: %s", r.raw)
	}
	r := h.post("/manglecp/evaluate", envelope(t, protocol.TypeIntentRequest, "d", diagnoseRequest()), as("admin-token-0123456789abc"))
	m := tool(t, r.intentResponse(t), "diagnose_causal_chain")
	inv := envelope(t, protocol.TypeInvokeRequest, "i", map[string]any{"macro_id": m.MacroID, "args": map[string]any{"request_id": "r42"}})
	if e := h.post("/manglecp/invoke", inv, as("observer-token-0123456789")).errorPayload(t); e.Code != protocol.CodeAuthInsufficient {
		t.Errorf("observer invoking the admin's macro-tool: %s", e.Code)
	}
	if r := h.post("/manglecp/invoke", inv, as("admin-token-0123456789abc")); r.status != http.StatusOK {
		t.Errorf("admin invoking: %s", r.raw)
	}
}
