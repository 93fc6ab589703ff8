package protocol

// Unit tests of issue 9's semantic fixes (docs/RELIABILITY.md,
// "Hardening: semantics").

import (
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestParseRFC3339 (issue 9 item 14): RFC 3339 section 5.6 allows a
// lowercase "t" and "z" and a leap second; Go's layout does not. Go's
// parser also takes a one-digit hour and a comma before the fraction,
// which RFC 3339 does not.
func TestParseRFC3339(t *testing.T) {
	tests := []struct {
		in, want string // want "" = an error
	}{
		{"2026-02-19T14:30:00Z", "2026-02-19T14:30:00Z"},
		{"2026-02-19t14:30:00z", "2026-02-19T14:30:00Z"},
		{"2026-02-19t14:30:00.25+02:00", "2026-02-19T12:30:00.25Z"},
		{"2016-12-31T23:59:60Z", "2017-01-01T00:00:00Z"},
		{"2016-12-31t23:59:60.5z", "2017-01-01T00:00:00.5Z"},
		{"2016-12-31T18:59:60-05:00", "2017-01-01T00:00:00Z"},
		{"2026-02-19T14:30:61Z", ""},
		{"2026-02-19 14:30:00Z", ""},
		{"2026-02-19T14:30:00", ""},
		{"2026-02-19x14:30:00Z", ""},
		{"", ""},
		{"now", ""},
		// What time.Parse takes and RFC 3339 does not.
		{"2026-02-19T4:30:00Z", ""},
		{"2026-02-19T14:30:00,5Z", ""},
		// The rest of the grammar, and values the shape admits.
		{"2026-02-19T14:30:00.Z", ""},
		{"2026-02-19T14:30:00+0200", ""},
		{"2026-02-19T14:30:00+2:00", ""},
		{"2026-02-19T14:30:00Z ", ""},
		{"+2026-02-19T14:30:00Z", ""},
		{"2026-13-19T14:30:00Z", ""},
		{"2026-02-19T24:00:00Z", ""},
		{"2026-02-19T14:60:00Z", ""},
		{"2026-02-19T14:30:00.123456789123Z", "2026-02-19T14:30:00.123456789Z"},
		{"2026-02-19T14:30:00-00:00", "2026-02-19T14:30:00Z"},
		{"2026-02-19T14:30:00+24:00", ""},
		{"2026-02-19T14:30:00+23:60", ""},
	}
	for _, tt := range tests {
		got, err := ParseRFC3339(tt.in)
		if tt.want == "" {
			if err == nil {
				t.Errorf("ParseRFC3339(%q) = %v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got.Format(time.RFC3339Nano) != tt.want || got.Location() != time.UTC {
			t.Errorf("ParseRFC3339(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	// Through the wire types too: eval_time and "t".
	var tm Time
	if err := json.Unmarshal([]byte(`"2026-02-19t14:30:00z"`), &tm); err != nil || tm.Format(time.RFC3339) != "2026-02-19T14:30:00Z" {
		t.Errorf("Time: %v %v", tm, err)
	}
	if msg := checkTemporal(&Temporal{At: "2016-12-31T23:59:60Z", hasAt: true}); msg != "" {
		t.Errorf("leap second in t.at: %s", msg)
	}
}

// TestTimeNow (issue 9 item 15): eval_time "now" decodes and encodes as
// itself.
func TestTimeNow(t *testing.T) {
	var req IntentRequest
	if err := json.Unmarshal([]byte(`{"intent":{"name":"x"},"facts":[],"eval_time":"now"}`), &req); err != nil {
		t.Fatal(err)
	}
	if req.EvalTime == nil || !req.EvalTime.Now || !req.EvalTime.IsZero() {
		t.Fatalf("eval_time %+v", req.EvalTime)
	}
	raw, err := json.Marshal(req)
	if err != nil || !strings.Contains(string(raw), `"eval_time":"now"`) {
		t.Errorf("encoded %s, %v", raw, err)
	}
}

// TestMissingRequiredFact (issue 9 item 13): a missing required fact is
// in details.missing_facts, never a violation with fact_index -1.
func TestMissingRequiredFact(t *testing.T) {
	intents := []IntentDecl{{Name: "diagnose", RequiredFacts: []string{"current_url", "flag"}}}
	raws := []json.RawMessage{json.RawMessage(`{"pred":"flag","args":["not a boolean"]}`)}
	r := CheckIntentFacts(raws, "diagnose", testProfile(), intents)
	if !r.Known || len(r.Violations) != 1 || r.Violations[0].FactIndex != 0 {
		t.Fatalf("violations %+v", r.Violations)
	}
	if len(r.Missing) != 1 || r.Missing[0].Predicate != "current_url" || r.Missing[0].Issue != IssueMissingRequiredFact {
		t.Fatalf("missing %+v (a present but invalid fact is not missing)", r.Missing)
	}
	e := r.Err()
	raw, _ := json.Marshal(e)
	if e.Code != CodeInvalidFacts || strings.Contains(string(raw), `"fact_index":-1`) || !strings.Contains(string(raw), `"missing_facts":[{"predicate":"current_url","issue":"missing_required_fact"`) {
		t.Errorf("error %s", raw)
	}
	only := CheckIntentFacts(nil, "diagnose", testProfile(), intents).Err()
	if only.Code != CodeInvalidFacts || len(only.Details.Violations) != 0 || len(only.Details.MissingFacts) != 2 {
		t.Errorf("only missing facts: %+v", only)
	}
	if CheckIntentFacts([]json.RawMessage{json.RawMessage(`{"pred":"current_url","args":["x"]}`), json.RawMessage(`{"pred":"flag","args":[true]}`)}, "diagnose", testProfile(), intents).Err() != nil {
		t.Error("complete request refused")
	}
}

// TestWireValue (issue 9 item 11): integers beyond 2^53 go out wrapped,
// wherever they are; the input is never modified.
func TestWireValue(t *testing.T) {
	in := map[string]any{
		"small": json.Number("9007199254740991"), "big": json.Number("9007199254740993"), "neg": int64(math.MinInt64),
		"float": json.Number("1e300"), "u": uint64(math.MaxUint64), "list": []any{1, int64(1) << 60},
		"wrapped": map[string]any{"_type": "int64", "value": "5"}, "s": "9007199254740993",
	}
	got, _ := json.Marshal(WireValue(in))
	want := `{"big":{"_type":"int64","value":"9007199254740993"},"float":1e300,"list":[1,{"_type":"int64","value":"1152921504606846976"}],"neg":{"_type":"int64","value":"-9223372036854775808"},"s":"9007199254740993","small":9007199254740991,"u":{"_type":"int64","value":"18446744073709551615"},"wrapped":{"_type":"int64","value":"5"}}`
	if string(got) != want {
		t.Errorf("WireValue:\n got  %s\n want %s", got, want)
	}
	if in["big"] != json.Number("9007199254740993") || in["list"].([]any)[1] != int64(1)<<60 {
		t.Error("WireValue modified its input")
	}
	f := NewFact("p", json.Number("-9007199254740993"), []any{json.Number("9007199254740992")})
	raw, _ := json.Marshal(f)
	if string(raw) != `{"pred":"p","args":[{"_type":"int64","value":"-9007199254740993"},[{"_type":"int64","value":"9007199254740992"}]]}` {
		t.Errorf("fact %s", raw)
	}
}

func TestClosest(t *testing.T) {
	names := []string{"observe", "diagnose_error", "automate"}
	for in, want := range map[string]string{"diagnose": "diagnose_error", "obsreve": "observe", "automat": "automate", "deploy": "", "": ""} {
		if got := Closest(in, names); got != want {
			t.Errorf("Closest(%q) = %q, want %q", in, got, want)
		}
	}
}

// rfc3339Grammar is RFC 3339 section 5.6's date-time, in upper case.
var rfc3339Grammar = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`)

// FuzzParseRFC3339: what ParseRFC3339 accepts is RFC 3339 section 5.6's
// date-time (whatever Go's time.Parse would also take), and it reads back
// as the same instant once written.
func FuzzParseRFC3339(f *testing.F) {
	for _, s := range []string{"2026-02-19T14:30:00Z", "2026-02-19t14:30:00.25+02:00", "2016-12-31T23:59:60Z",
		"2026-02-19T4:30:00Z", "2026-02-19T14:30:00,5Z", "2026-02-19T14:30:00+24:00", "0000-01-01T00:00:00-23:59"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseRFC3339(s)
		if err != nil {
			return
		}
		if !rfc3339Grammar.MatchString(strings.ToUpper(s)) {
			t.Fatalf("ParseRFC3339(%q) accepted what RFC 3339 does not", s)
		}
		back, err := ParseRFC3339(got.Format(time.RFC3339Nano))
		if got.Year() >= 0 && got.Year() <= 9999 && (err != nil || !back.Equal(got)) {
			t.Fatalf("ParseRFC3339(%q) = %v, which reads back as %v, %v", s, got, back, err)
		}
	})
}
