package conformance

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Fixture tells the suite how to exercise one domain: which intent and
// facts select macro-tools, valid arguments for one of them, which tool
// needs confirmation, eval times inside and outside a validity window, and
// a request slow enough to cancel. Every part is optional; checks that
// need a missing part SKIP. It is read from JSON (see the package
// documentation for the format). A run replays it in the present: every
// time of the fixture (eval times, the "t" of facts) moves by one amount
// so that Evaluate's eval_time is 10 seconds before the run, because
// servers check validity windows against their own clock (Spec 07 section
// 2.3). Fact arguments never move.
type Fixture struct {
	// Name identifies the fixture in reports.
	Name string `json:"name"`
	// Description says which server or domain the fixture is for.
	Description string `json:"description,omitempty"`
	// Domain is the manifest's domain.id of the servers the fixture is
	// for. A run without Options.Fixture uses the built-in fixture for the
	// server's domain, when its evaluate request selects the tools it
	// names (see [Run]).
	Domain string `json:"domain,omitempty"`
	// Evaluate is an intent request that selects at least one macro-tool.
	// It becomes the suite's main request (determinism, gas, disclosure,
	// proof hints). Without it the suite probes the manifest's intents
	// with their required facts.
	Evaluate *FixtureRequest `json:"evaluate,omitempty"`
	// Invoke names a tool of Evaluate's response and valid arguments.
	Invoke *FixtureInvoke `json:"invoke,omitempty"`
	// Confirmation names a tool of Evaluate's response whose safety
	// requires user confirmation, with valid arguments. The suite invokes
	// it only without a token and with an invalid token, so it never runs.
	Confirmation *FixtureInvoke `json:"confirmation,omitempty"`
	// Temporal names a tool with a validity window and eval times inside
	// and outside it.
	Temporal *FixtureTemporal `json:"temporal,omitempty"`
	// Slow is a request whose evaluation takes long enough to be cancelled
	// on session transports (tens of milliseconds suffice; a cancel is sent
	// 10 ms after the request).
	Slow *FixtureSlow `json:"slow,omitempty"`
}

// FixtureRequest is an intent request: intent, facts and eval_time as they
// go on the wire.
type FixtureRequest struct {
	Intent FixtureIntent `json:"intent"`
	// Facts are Fact objects (Spec 03 section 2), sent unchanged.
	Facts []json.RawMessage `json:"facts"`
	// EvalTime is the request's eval_time (RFC 3339), "" for none.
	EvalTime string `json:"eval_time,omitempty"`
}

// FixtureIntent is an intent name with optional params.
type FixtureIntent struct {
	Name   string          `json:"name"`
	Params json.RawMessage `json:"params,omitempty"`
}

// FixtureInvoke names a macro-tool by its name and gives arguments that
// validate against its input_schema.
type FixtureInvoke struct {
	// Tool is the macro-tool's name in the response to Evaluate.
	Tool string `json:"tool"`
	// Args are valid invocation arguments.
	Args json.RawMessage `json:"args"`
	// EvalTime is the invocation's eval_time (RFC 3339), "" for none. The
	// suite moves it with the rest of the fixture (see [Fixture]); validity
	// windows are checked against the server's clock, never against it.
	EvalTime string `json:"eval_time,omitempty"`
	// InvalidArgs, when set, must fail schema validation; by default the
	// suite derives invalid arguments from the input_schema.
	InvalidArgs json.RawMessage `json:"invalid_args,omitempty"`
	// ExpectNext says the invoke response carries next.suggested_intents.
	ExpectNext bool `json:"expect_next,omitempty"`
}

// FixtureTemporal describes a validity window (Spec 06 section 2.2).
type FixtureTemporal struct {
	// Tool is offered by Evaluate's request at Inside, not at Outside.
	Tool string `json:"tool"`
	// Inside is an eval_time at which the tool is selected.
	Inside string `json:"inside"`
	// Outside is a later eval_time past the window: the tool is not
	// selected, and invoking the macro-tool obtained at Inside with this
	// eval_time answers macro_expired.
	Outside string `json:"outside"`
	// Args are valid arguments for the tool (default: the Invoke args
	// when Invoke names the same tool).
	Args json.RawMessage `json:"args,omitempty"`
}

// FixtureSlow is a request built from base facts plus Count copies of a
// fact template, or of each template of a list. In a template's string
// arguments "{i}" becomes the copy number; an argument that is exactly
// "{i:number}" becomes the number. A list lets the copies join each other:
// "repeat": [{"pred": "a", ...}, {"pred": "b", ...}] sends a0, b0, a1, b1 ...
type FixtureSlow struct {
	Intent FixtureIntent     `json:"intent"`
	Facts  []json.RawMessage `json:"facts"`
	Repeat json.RawMessage   `json:"repeat"`
	Count  int               `json:"count"`
}

//go:embed testdata/*.json
var builtinFixtures embed.FS

// BuiltinFixtures lists the names of the fixtures embedded in the package
// ("browser": the default domain, domains/browser; "workspace": the
// workspace domain, domains/workspace, over a root holding notes.txt).
func BuiltinFixtures() []string {
	entries, _ := builtinFixtures.ReadDir("testdata")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".json"))
	}
	sort.Strings(out)
	return out
}

// BuiltinFixture returns the embedded fixture name (see [BuiltinFixtures]).
func BuiltinFixture(name string) (*Fixture, error) {
	raw, err := builtinFixtures.ReadFile("testdata/" + name + ".json")
	if err != nil {
		return nil, fmt.Errorf("no built-in fixture %q (have %s)", name, strings.Join(BuiltinFixtures(), ", "))
	}
	return ParseFixture(raw)
}

// LoadFixture reads a fixture: the name of a built-in fixture, or the path
// of a JSON file (a name with a path separator or ending in .json is always
// a path).
func LoadFixture(nameOrPath string) (*Fixture, error) {
	if !strings.ContainsAny(nameOrPath, `/\`) && !strings.HasSuffix(nameOrPath, ".json") {
		f, err := BuiltinFixture(nameOrPath)
		if err == nil {
			return f, nil
		}
		if _, statErr := os.Stat(nameOrPath); statErr != nil {
			return nil, err
		}
	}
	raw, err := os.ReadFile(nameOrPath)
	if err != nil {
		return nil, err
	}
	f, err := ParseFixture(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", nameOrPath, err)
	}
	return f, nil
}

// ParseFixture decodes a fixture strictly (unknown fields are errors) and
// checks that its parts are complete.
func ParseFixture(raw []byte) (*Fixture, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var f Fixture
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("fixture: %w", err)
	}
	if err := f.validate(); err != nil {
		return nil, fmt.Errorf("fixture: %w", err)
	}
	return &f, nil
}

func (f *Fixture) validate() error {
	var errs []error
	if f.Evaluate != nil && f.Evaluate.Intent.Name == "" {
		errs = append(errs, errors.New("evaluate.intent.name is required"))
	}
	needEval := func(part string) {
		if f.Evaluate == nil {
			errs = append(errs, fmt.Errorf("%s needs evaluate", part))
		}
	}
	for part, inv := range map[string]*FixtureInvoke{"invoke": f.Invoke, "confirmation": f.Confirmation} {
		if inv == nil {
			continue
		}
		needEval(part)
		if inv.Tool == "" {
			errs = append(errs, fmt.Errorf("%s.tool is required", part))
		}
		if len(inv.Args) == 0 {
			errs = append(errs, fmt.Errorf("%s.args is required (use {} for none)", part))
		}
	}
	if t := f.Temporal; t != nil {
		needEval("temporal")
		if t.Tool == "" || t.Inside == "" || t.Outside == "" {
			errs = append(errs, errors.New("temporal needs tool, inside and outside"))
		}
	}
	if s := f.Slow; s != nil {
		if s.Intent.Name == "" || len(s.Repeat) == 0 || s.Count <= 0 {
			errs = append(errs, errors.New("slow needs intent.name, repeat and a positive count"))
		}
		var one map[string]any
		var list []map[string]any
		if len(s.Repeat) > 0 && json.Unmarshal(s.Repeat, &one) != nil && (json.Unmarshal(s.Repeat, &list) != nil || len(list) == 0) {
			errs = append(errs, errors.New("slow.repeat must be a fact template or a non-empty list of them"))
		}
	}
	return errors.Join(errs...)
}

// temporalArgs are the arguments for invoking the temporal tool.
func (f *Fixture) temporalArgs() json.RawMessage {
	if f.Temporal == nil {
		return nil
	}
	if len(f.Temporal.Args) > 0 {
		return f.Temporal.Args
	}
	if f.Invoke != nil && f.Invoke.Tool == f.Temporal.Tool {
		return f.Invoke.Args
	}
	return json.RawMessage(`{}`)
}
