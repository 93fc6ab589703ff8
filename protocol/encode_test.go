package protocol

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func checkAppendJSON(t *testing.T, v any) {
	t.Helper()
	got, err := AppendJSON([]byte("x"), v)
	want, werr := json.Marshal(v)
	if (err == nil) != (werr == nil) || (err == nil && !bytes.Equal(got, append([]byte("x"), want...))) || (err != nil && string(got) != "x") {
		t.Errorf("AppendJSON(%#v) = %s %v, json.Marshal %s %v", v, got, err, want, werr)
	}
}

// tricky are strings json.Marshal escapes in every way it can.
var tricky = []string{"", "a", "<a&b>", "é", "\xff", "a\xffb", "\xe2\x80", "\u2028x\u2029", "q\"\\", "tab\t\n\r\b\f\x00\x1f\x7f",
	"日本語", "emoji 🙂", "\U0010ffff", "\ufffd", "'single'", "a/b"}

// TestAppendJSONMatchesMarshal: AppendJSON writes json.Marshal's bytes for
// the values a response holds, and fails where it fails.
func TestAppendJSONMatchesMarshal(t *testing.T) {
	at := time.Date(2026, 2, 19, 14, 30, 5, 123, time.FixedZone("x", 3600))
	var nilMap map[string]any
	values := []any{
		nil, true, false, 0, -5, int64(math.MaxInt64), int32(-7), uint64(math.MaxUint64),
		json.Number("12"), json.Number("-1.5e3"), json.Number(""), json.Number("01"), json.Number("x"), 2.5, 1e21, math.Inf(1),
		[]any{}, []any(nil), []any{"a", 1, nil, []any{true}}, []string(nil), []string{}, []string{"none", "<x>"},
		map[string]any{}, nilMap, map[string]any{"b": 1, "a": map[string]any{"z": []any{"y"}, "<": "&"}, "B": nil, "é": "\u2028"},
		&at, at, (*time.Time)(nil), Time{Time: at}, Time{Now: true}, &Time{Time: at}, (*Time)(nil),
		struct{ A int }{1}, make(chan int), map[string]any{"bad": make(chan int)}, []any{1, func() {}},
		map[string]any{"big": map[string]any{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8, "i": 9, "j": 10,
			"k": 11, "l": 12, "m": 13, "n": 14, "o": 15, "p": 16, "q": 17, "r": 18}},
	}
	for _, s := range tricky {
		values = append(values, s, map[string]any{s: s})
	}
	for _, v := range values {
		checkAppendJSON(t, v)
	}
}

func FuzzAppendJSON(f *testing.F) {
	f.Add(`{"a":[1,"<b>",{"c":null}],"d":true}`)
	f.Add(`["x",1.5e300,-0,"\u2028","\ud800"]`)
	for _, s := range tricky {
		raw, _ := json.Marshal(s)
		f.Add(string(raw))
	}
	f.Fuzz(func(t *testing.T, in string) {
		checkAppendJSON(t, in)
		dec := json.NewDecoder(strings.NewReader(in))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		checkAppendJSON(t, v)
		checkAppendJSON(t, []any{in, v})
	})
}

// randomResponse is an intent response with every field set or not, nil
// or empty, at random, and strings from tricky.
func randomResponse(r *rand.Rand) *IntentResponse {
	str := func() string {
		if r.IntN(3) == 0 {
			return ""
		}
		return tricky[r.IntN(len(tricky))] + "x"
	}
	strs := func() []string {
		switch r.IntN(3) {
		case 0:
			return nil
		case 1:
			return []string{}
		}
		return []string{str(), str()}
	}
	at := func() *Time {
		if r.IntN(2) == 0 {
			return nil
		}
		return NewTime(time.Unix(r.Int64N(4e9), r.Int64N(1e9)).In(time.FixedZone("z", 3600*r.IntN(5))))
	}
	resp := &IntentResponse{EvalTimeUsed: Time{Time: time.Unix(1771511405, r.Int64N(2)*5e8)}, EvalDurationMS: r.Int64N(100)}
	if r.IntN(4) == 0 {
		resp.EvalTimeUsed = Time{Now: true}
	}
	if r.IntN(5) > 0 {
		resp.MacroTools = []MacroTool{}
	}
	for range r.IntN(4) {
		m := MacroTool{MacroID: str(), Name: str(), Description: str(), DisclosureLevel: str()}
		if r.IntN(2) == 0 {
			m.InputSchema = map[string]any{"type": "object", "properties": map[string]any{str(): map[string]any{"enum": []any{str(), json.Number("3"), 2.5}, "default": true}},
				"required": []any{str()}, "additionalProperties": false}
		} else if r.IntN(2) == 0 {
			m.InputSchema = map[string]any{}
		}
		if r.IntN(3) == 0 {
			m.OutputSchema = map[string]any{"type": "object", str(): nil}
		}
		if r.IntN(2) == 0 {
			ci := &ContextInjection{Instructions: str()}
			for range r.IntN(3) {
				ci.Skills = append(ci.Skills, SkillRef{SkillID: str(), Inline: r.IntN(2) == 0, Content: str()})
			}
			for range r.IntN(3) {
				cr := ContextResource{URI: str(), Relevance: str()}
				if r.IntN(2) == 0 {
					p := r.Int64N(200) - 50
					cr.Priority = &p
				}
				ci.ContextResources = append(ci.ContextResources, cr)
			}
			m.ContextInjection = ci
		}
		if r.IntN(2) == 0 {
			m.Safety = &Safety{RequiresUserConfirmation: r.IntN(2) == 0, SideEffects: strs(), Reversible: r.IntN(2) == 0, Idempotent: r.IntN(2) == 0}
		}
		if r.IntN(2) == 0 {
			m.Validity = &Validity{NotBefore: at(), ExpiresAt: at()}
		}
		if r.IntN(2) == 0 {
			m.Metadata = &ToolMetadata{SelectionPhase: str(), Score: r.Int64N(300) - 100, SourceRules: strs()}
		}
		resp.MacroTools = append(resp.MacroTools, m)
	}
	if r.IntN(4) == 0 {
		resp.ProofHints = &ProofHints{Derivations: []Derivation{{MacroID: str(), SelectedBy: str(), Score: 3, RuleChain: strs(),
			SupportingFacts: []Fact{NewFact("p", str(), json.Number("1"))}}}}
	}
	if r.IntN(3) == 0 {
		resp.RequiredSkills = []Skill{}
	}
	for range r.IntN(3) {
		sk := Skill{SkillID: str(), Name: str(), Description: str(), Content: str(), ContentType: str()}
		for range r.IntN(3) {
			sk.Resources = append(sk.Resources, SkillResource{URI: str(), Type: str(), Description: str()})
		}
		resp.RequiredSkills = append(resp.RequiredSkills, sk)
	}
	if r.IntN(4) > 0 {
		d := &Diagnostics{FactsEvaluated: r.Int64N(1000), FactsDerived: r.Int64N(100), RulesFired: r.Int64N(50)}
		if r.IntN(3) > 0 {
			n := r.IntN(4)
			d.PhasesCompleted = &n
		}
		if r.IntN(3) == 0 {
			d.RuleCoverage = &RuleCoverage{TotalRules: 3, RulesFired: 1, DormantDetails: []RuleStatus{{Rule: str(), MissingPredicates: strs(), Status: str()}}}
		}
		resp.Diagnostics = d
	}
	if r.IntN(3) == 0 {
		resp.Warnings = []Warning{}
	}
	for range r.IntN(3) {
		w := Warning{Code: WarningCode(str()), Message: str()}
		switch r.IntN(3) {
		case 0:
			w.Details = map[string]any{}
		case 1:
			w.Details = map[string]any{"count": 3, str(): str(), "list": []any{int64(1), "b"}}
		}
		resp.Warnings = append(resp.Warnings, w)
	}
	return resp
}

// TestAppendIntentResponseMatchesMarshal: an intent response is written
// as json.Marshal writes it, whichever fields are set (random responses),
// and so are the intent responses of the golden files.
func TestAppendIntentResponseMatchesMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(40, 1))
	check := func(name string, resp *IntentResponse) {
		t.Helper()
		got, err := resp.AppendJSON(nil)
		want, werr := json.Marshal(resp)
		if err != nil || werr != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: AppendJSON:\n%s\n%v\njson.Marshal:\n%s\n%v", name, got, err, want, werr)
		}
		env, err := NewEnvelope(TypeIntentResponse, "id", resp)
		if err != nil || !bytes.Equal(env.Payload, want) {
			t.Fatalf("%s: NewEnvelope's payload differs: %v", name, err)
		}
	}
	for i := range 3000 {
		check("random", randomResponse(r))
		_ = i
	}
	goldens, _ := filepath.Glob(filepath.Join("..", "testdata", "golden", "*.json"))
	more, _ := filepath.Glob(filepath.Join("..", "domains", "*", "testdata", "golden", "*.json"))
	n := 0
	for _, path := range append(goldens, more...) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		type envelope struct {
			Type    MessageType     `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		var env struct {
			envelope
			Response *envelope `json:"response"` // a golden exchange
		}
		if json.Unmarshal(data, &env) != nil {
			continue
		}
		if env.Response != nil {
			env.envelope = *env.Response
		}
		if env.Type != TypeIntentResponse {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(env.Payload))
		dec.UseNumber()
		var resp IntentResponse
		if err := dec.Decode(&resp); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		check(path, &resp)
		n++
	}
	if n == 0 {
		t.Error("no golden intent response found")
	}
	t.Logf("%d golden intent responses", n)
}

// TestAppendIntentResponseFails: a value json.Marshal cannot encode fails
// the same way, with the buffer as it was.
func TestAppendIntentResponseFails(t *testing.T) {
	resp := &IntentResponse{MacroTools: []MacroTool{{InputSchema: map[string]any{"x": make(chan int)}}}}
	if _, werr := json.Marshal(resp); werr == nil {
		t.Fatal("json.Marshal encoded a channel")
	}
	got, err := resp.AppendJSON([]byte("keep"))
	if err == nil || string(got) != "keep" {
		t.Errorf("AppendJSON = %q, %v", got, err)
	}
	if _, err := NewEnvelope(TypeIntentResponse, "id", resp); err == nil {
		t.Error("NewEnvelope encoded a channel")
	}
}

// BenchmarkAppendIntentResponse writes the Spec 05 golden's intent
// response (three macro-tools, a skill) both ways.
func BenchmarkAppendIntentResponse(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "golden", "spec05_evaluate.json"))
	if err != nil {
		b.Fatal(err)
	}
	var golden struct {
		Response struct {
			Payload json.RawMessage `json:"payload"`
		} `json:"response"`
	}
	if err := json.Unmarshal(data, &golden); err != nil {
		b.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(golden.Response.Payload))
	dec.UseNumber()
	var resp IntentResponse
	if err := dec.Decode(&resp); err != nil {
		b.Fatal(err)
	}
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = resp.AppendJSON(make([]byte, 0, 4096))
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(&resp)
		}
	})
}

// TestIntentEnvelopeEncode: an intent response's envelope encodes as
// json.Marshal encodes the envelope, also after a caller changed its id,
// type, version or payload.
func TestIntentEnvelopeEncode(t *testing.T) {
	resp := randomResponse(rand.New(rand.NewPCG(7, 7)))
	other := "other-<id>"
	for _, change := range []func(*Envelope){
		func(*Envelope) {},
		func(e *Envelope) { e.ID = nil },
		func(e *Envelope) { e.ID = &other },
		func(e *Envelope) {
			if e.ID != nil {
				*e.ID = "changed in place"
			}
		},
		func(e *Envelope) { e.Type = TypeInvokeResponse },
		func(e *Envelope) { e.Version = "1999-01-01" },
		func(e *Envelope) { e.Payload = json.RawMessage(`{"x": 1}`) },
		func(e *Envelope) { e.Payload = e.Payload[:len(e.Payload):len(e.Payload)] },
	} {
		for _, id := range []string{"", "id-1", strings.Repeat("long", 100)} {
			env, err := NewEnvelope(TypeIntentResponse, id, resp)
			if err != nil {
				t.Fatal(err)
			}
			change(env)
			got, err := env.Encode()
			want, werr := json.Marshal(env)
			if err != nil || werr != nil || !bytes.Equal(got, want) {
				t.Errorf("Encode:\n%s\njson.Marshal:\n%s", got, want)
			}
		}
	}
}
