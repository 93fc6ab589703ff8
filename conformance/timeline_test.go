package conformance

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"
)

// TestFixtureInPresent: the fixture's timeline moves as one, so that its
// eval_time is just before the run; facts without "t", "_" and "now" stay
// as written.
func TestFixtureInPresent(t *testing.T) {
	f, err := BuiltinFixture("browser")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)
	p := f.inPresent(start)
	if p.Evaluate.EvalTime != "2030-05-01T11:59:50Z" {
		t.Errorf("eval_time %s", p.Evaluate.EvalTime)
	}
	d := start.Add(-presentLead).Sub(time.Date(2026, 2, 19, 14, 30, 5, 0, time.UTC))
	if p.Invoke.EvalTime != "2030-05-01T11:59:55Z" || p.Temporal.Inside != "2030-05-01T11:59:50Z" || p.Temporal.Outside != time.Date(2026, 2, 19, 14, 40, 0, 0, time.UTC).Add(d).Format(time.RFC3339) {
		t.Errorf("invoke %s, temporal %+v", p.Invoke.EvalTime, p.Temporal)
	}
	if string(p.Evaluate.Facts[0]) != string(f.Evaluate.Facts[0]) {
		t.Errorf("a fact without t changed: %s", p.Evaluate.Facts[0])
	}
	var ev struct {
		Args []json.RawMessage          `json:"args"`
		T    map[string]json.RawMessage `json:"t"`
	}
	if err := json.Unmarshal(p.Evaluate.Facts[3], &ev); err != nil {
		t.Fatal(err)
	}
	if string(ev.T["at"]) != strconv.FormatInt(1771511399500+d.Milliseconds(), 10) || string(ev.Args[3]) != "1771511399500" {
		t.Errorf("epoch ms annotation %s (want it moved), argument %s (want it kept)", ev.T["at"], ev.Args[3])
	}
	if f.Evaluate.EvalTime != "2026-02-19T14:30:05Z" {
		t.Error("inPresent modified the fixture")
	}
	if got := shiftFacts([]json.RawMessage{json.RawMessage(`{"pred":"p","args":[],"t":{"start":"_","end":"now"}}`)}, time.Hour); string(got[0]) != `{"args":[],"pred":"p","t":{"end":"now","start":"_"}}` {
		t.Errorf("unbounded and now: %s", got[0])
	}
}
