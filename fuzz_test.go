package manglecp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
)

// The fuzz targets of this file drive the real server through Handle, the
// entry point every transport uses. Invariants (docs/RELIABILITY.md): the
// answer is a response or a registry error, never internal_error; a
// readable id is echoed; no answer leaks internals.

// fuzzServer is a browser-domain server whose log can be read per input.
type fuzzServer struct {
	srv  *manglecp.Server
	logs *testenv.Buffer // reset before each input
}

func newFuzzServer(f *testing.F) *fuzzServer {
	f.Helper()
	dir, err := os.MkdirTemp("", "manglecp-fuzz-")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(dir) })
	logs := &testenv.Buffer{}
	d := browser.Domain(browser.Config{ReportDir: dir})
	srv, err := manglecp.NewServer(d, &manglecp.Options{
		Logger:          slog.New(slog.NewJSONHandler(logs, nil)),
		Now:             func() time.Time { return fixedNow },
		ConfirmationKey: []byte("test confirmation key"),
	})
	if err != nil {
		f.Fatal(err)
	}
	return &fuzzServer{srv: srv, logs: logs}
}

// handle answers raw through Handle and checks the invariants common to
// every input; it returns the answer for target-specific checks.
func (s *fuzzServer) handle(t *testing.T, raw []byte) *protocol.Envelope {
	t.Helper()
	s.logs.Take()
	env := s.srv.Handle(context.Background(), &protocol.Inbound{Data: raw, Peer: "fuzz"})
	logs := s.logs.Take()
	out, err := env.Encode()
	if err != nil {
		t.Fatalf("the answer does not encode: %v", err)
	}
	switch env.Type {
	case protocol.TypeIntentResponse, protocol.TypeInvokeResponse, protocol.TypeAuthenticateResponse:
	case protocol.TypeError:
		var e protocol.Error
		if err := json.Unmarshal(env.Payload, &e); err != nil {
			t.Fatalf("error payload: %s", out)
		}
		if _, ok := protocol.Lookup(e.Code); !ok || e.Message == "" {
			t.Fatalf("error code %q is not a registry error: %s", e.Code, out)
		}
		if e.Code == protocol.CodeInternalError {
			if strings.Contains(logs, "invalid number literal") {
				t.Fatal("regression of a fixed bug (protocol TestInt64WrapperNotCanonical): a non-canonical int64 wrapper value makes the response unencodable")
			}
			t.Fatalf("internal_error for input %q\nlog: %s", raw, logs)
		}
	default:
		t.Fatalf("answer of type %s: %s", env.Type, out)
	}
	if strings.Contains(logs, "panic while handling request") || strings.Contains(logs, "action panicked") {
		t.Fatalf("the server logged a panic: %s", logs)
	}
	if id, ok := testenv.ReadableID(raw, protocol.MaxNestingDepth); ok && env.IDString() != id {
		t.Fatalf("the id %q was readable but the answer has %q: %s", id, env.IDString(), out)
	}
	if env.ID != nil {
		if id, ok := testenv.ReadableID(raw, protocol.MaxNestingDepth); !ok || *env.ID != id {
			t.Fatalf("the answer has id %q, which the request did not carry readably", *env.ID)
		}
	}
	text := fzStrings(env.Payload)
	for _, m := range leakMarkers {
		if strings.Contains(text, m) && !strings.Contains(string(raw), m) {
			t.Fatalf("the answer leaks %q: %s", m, out)
		}
	}
	return env
}

// fzStrings returns the keys and string values of a JSON payload, one per
// line: the text a leak could hide in. (Scanning the raw JSON would match
// the marker ":-" in "fact_index":-1.)
func fzStrings(payload []byte) string {
	var v any
	if json.Unmarshal(payload, &v) != nil {
		return string(payload)
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString(x + "\n")
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				b.WriteString(k + "\n")
				walk(e)
			}
		}
	}
	walk(v)
	return b.String()
}

// fzTools evaluates the browser domain's three intents and returns the
// macro_ids of every tool, sorted by name.
func fzTools(f *testing.F, s *fuzzServer) []string {
	f.Helper()
	automate := map[string]any{
		"intent": map[string]any{"name": "automate"},
		"facts": []any{
			map[string]any{"pred": "current_url", "args": []any{"https://app.example.com"}},
			map[string]any{"pred": "automation_goal", "args": []any{"log in"}},
			map[string]any{"pred": "interactive_element", "args": []any{"e1", "button", "Log in"}},
			map[string]any{"pred": "interactive_element", "args": []any{"e2", "input", "Email"}},
		},
		"options": map[string]any{"disclosure_preference": "full"},
	}
	observe := diagnoseRequest()
	observe["intent"] = map[string]any{"name": "observe"}
	byName := map[string]string{}
	for i, p := range []map[string]any{diagnoseRequest(), observe, automate} {
		env := s.srv.Handle(context.Background(), &protocol.Inbound{Data: envelope(f, protocol.TypeIntentRequest, "setup-"+string(rune('a'+i)), p)})
		var r protocol.IntentResponse
		if env.Type != protocol.TypeIntentResponse || json.Unmarshal(env.Payload, &r) != nil {
			f.Fatalf("setup evaluation: %s %s", env.Type, env.Payload)
		}
		for _, m := range r.MacroTools {
			byName[m.Name] = m.MacroID
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	ids := make([]string, len(names))
	for i, n := range names {
		ids[i] = byName[n]
	}
	if len(ids) < 5 {
		f.Fatalf("setup found only the tools %v", names)
	}
	return ids
}

// FuzzInvokeArgs fuzzes the args object of an invoke_request against the
// generated input schemas of every browser-domain macro-tool (enums,
// required, defaults, booleans, additionalProperties false): the answer is
// an invoke_response or one of the invocation errors, never a crash.
func FuzzInvokeArgs(f *testing.F) {
	s := newFuzzServer(f)
	ids := fzTools(f, s)
	for _, a := range []string{
		`{}`, `{"request_id":"r42"}`, `{"request_id":"r42","include_network":false}`, `{"request_id":"nope"}`,
		`{"request_id":42}`, `{"request_id":null}`, `{"request_id":"r42","extra":1}`, `{"focus":"console"}`,
		`{"focus":"all","focus2":[1,{"a":null}]}`, `{"target_element":"e1","action":"fill","value":"x"}`,
		`{"target_element":"e1","action":"click"}`, `{"target_element":"zz","action":"dance"}`, `{"title":"` + strings.Repeat("t", 300) + `"}`,
		`{"request_id":"r42","include_network":"yes"}`, `{"request_id":{"_type":"int64","value":"1"}}`,
		`{"n":9223372036854775808}`, `{"n":1e400}`, `{"n":-0.0}`, `{"\u0000":"\ud800"}`,
		`[]`, `null`, `"x"`, `1`, `{"a":1,"a":2}`, `{`, ``,
	} {
		for i := range ids {
			f.Add([]byte(a), uint8(i))
		}
	}
	allowed := map[protocol.Code]bool{
		protocol.CodeMalformedMessage: true, protocol.CodeSchemaValidationFailed: true,
		protocol.CodeConfirmationRequired: true, protocol.CodeMessageTooLarge: true,
	}
	f.Fuzz(func(t *testing.T, args []byte, which uint8) {
		id := ids[int(which)%len(ids)]
		msg := []byte(`{"type":"invoke_request","id":"fz","manglecp":"2026-02-draft","payload":{"macro_id":"` + id + `","args":` + string(args) + `}}`)
		env := s.handle(t, msg)
		if e := fzError(t, env, allowed, "invoke", "args", args); e != nil {
			if e.Code == protocol.CodeSchemaValidationFailed && (e.Details == nil || len(e.Details.SchemaErrors) == 0) {
				t.Fatalf("schema_validation_failed without schema_errors: %s", env.Payload)
			}
		}
	})
}

// FuzzHandle sends arbitrary bytes to Handle. Seeds: the hostile corpus
// of testdata/hostile and the requests of the README.
func FuzzHandle(f *testing.F) {
	s := newFuzzServer(f)
	paths, _ := filepath.Glob(filepath.Join("testdata", "hostile", "*.json"))
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(bytes.TrimSuffix(raw, []byte("\n")))
	}
	f.Add(envelope(f, protocol.TypeIntentRequest, "readme-1", diagnoseRequest()))
	f.Add([]byte(`{"type":"authenticate","id":"a1","manglecp":"2026-02-draft","payload":{"scheme":"bearer","token":"0123456789abcdef"}}`))
	f.Add([]byte(`{"type":"invoke_request","id":"i1","manglecp":"2026-02-draft","payload":{"macro_id":"diagnose_causal_chain-0000000000000000","args":{}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s.handle(t, data)
	})
}

// FuzzEvaluateFacts fuzzes the facts of a diagnose_error request with
// proof hints and full disclosure, so accepted facts travel through the
// kernel, the explainer and the rendering of the response.
func FuzzEvaluateFacts(f *testing.F) {
	s := newFuzzServer(f)
	seed := func(facts ...any) []byte {
		raw, err := json.Marshal(facts)
		if err != nil {
			f.Fatal(err)
		}
		return raw
	}
	var all []any
	for _, fact := range diagnoseFacts() {
		all = append(all, fact)
	}
	url := map[string]any{"pred": "current_url", "args": []any{"https://app.example.com"}}
	f.Add(seed(all...))
	f.Add(seed(url, map[string]any{"pred": "console_event", "named_args": map[string]any{"session_id": "s1", "level": "error", "message": "m", "timestamp": 1.5}, "t": map[string]any{"start": "_", "end": "now"}}))
	f.Add(seed(url, map[string]any{"pred": "net_response", "args": []any{"s1", "r1", map[string]any{"_type": "int64", "value": "9223372036854775807"}, 0}, "t": map[string]any{"at": 0}}))
	f.Add(seed(url, map[string]any{"pred": "net_request", "args": []any{"s1", "r1", "GET", "u", -1}, "t": map[string]any{"start": "2026-02-19T14:30:00Z", "end": "now"}}))
	f.Add(seed(url, map[string]any{"pred": "disclosure_upgrade", "args": []any{"diagnose_causal_chain-0000000000000000"}}))
	f.Add(seed(url, map[string]any{"pred": "automation_goal", "args": []any{"x"}}, map[string]any{"pred": "interactive_element", "args": []any{"e", "k", "l"}}))
	f.Add([]byte(`[{"pred":"current_url","args":["u"]},{"pred":"console_event","args":["s","error","m",1],"t":{"at":"9999-12-31T23:59:59Z"}}]`))
	allowed := map[protocol.Code]bool{
		protocol.CodeMalformedMessage: true, protocol.CodeInvalidFacts: true, protocol.CodeUnknownPredicate: true,
		protocol.CodeArityMismatch: true, protocol.CodeTypeMismatch: true, protocol.CodeReservedPredicate: true,
		protocol.CodeTooManyFacts: true, protocol.CodeDerivationLimitExceeded: true, protocol.CodeIntervalLimitExceeded: true,
		protocol.CodeEvaluationTimeout: true, protocol.CodeMessageTooLarge: true,
	}
	f.Fuzz(func(t *testing.T, facts []byte) {
		msg := []byte(`{"type":"intent_request","id":"fz","manglecp":"2026-02-draft","payload":{"intent":{"name":"diagnose_error"},"facts":` +
			string(facts) + `,"eval_time":"2026-02-19T14:30:05Z","options":{"include_proof_hints":true,"disclosure_preference":"full"}}}`)
		env := s.handle(t, msg)
		if fzError(t, env, allowed, "evaluation", "facts", facts) != nil {
			return
		}
		var r protocol.IntentResponse
		if err := json.Unmarshal(env.Payload, &r); err != nil {
			t.Fatalf("intent_response does not decode: %v", err)
		}
	})
}

// fzError is the error an answer carries (nil for any other answer),
// which must be one of allowed; what and input (named name) word the
// failure.
func fzError(t *testing.T, env *protocol.Envelope, allowed map[protocol.Code]bool, what, name string, input []byte) *protocol.Error {
	t.Helper()
	if env.Type != protocol.TypeError {
		return nil
	}
	var e protocol.Error
	_ = json.Unmarshal(env.Payload, &e)
	if !allowed[e.Code] {
		t.Fatalf("%s answered %s for %s %s: %s", what, e.Code, name, input, env.Payload)
	}
	return &e
}
