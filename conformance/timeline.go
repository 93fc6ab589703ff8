package conformance

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// presentLead is how far before the start of a run the suite puts the
// fixture's evaluate.eval_time: far enough that a macro-tool's not_before
// (often the eval_time) has passed on a server whose clock lags a little.
const presentLead = 10 * time.Second

// inPresent returns a copy of f moved in time so that evaluate.eval_time
// is presentLead before start, or f itself when it has no eval_time.
// Servers check a macro-tool's validity window against their own clock
// (Spec 07 section 2.3), so a fixture written on one day must be replayed
// in the present for its macro-tools to be invokable on another. Every
// time of the fixture moves by the same amount: eval times, and the "t"
// annotations of its facts (RFC 3339 strings and epoch milliseconds; "_"
// and "now" stay). Fact arguments are data and never move, so rules must
// compare argument timestamps only with each other.
func (f *Fixture) inPresent(start time.Time) *Fixture {
	if f == nil || f.Evaluate == nil || f.Evaluate.EvalTime == "" {
		return f
	}
	at, ok := parseTime(f.Evaluate.EvalTime)
	if !ok {
		return f
	}
	d := start.Truncate(time.Second).Add(-presentLead).Sub(at)
	c := *f
	ev := *f.Evaluate
	ev.EvalTime = shiftTime(ev.EvalTime, d)
	ev.Facts = shiftFacts(ev.Facts, d)
	c.Evaluate = &ev
	for _, inv := range []**FixtureInvoke{&c.Invoke, &c.Confirmation} {
		if *inv != nil {
			x := **inv
			x.EvalTime = shiftTime(x.EvalTime, d)
			*inv = &x
		}
	}
	if f.Temporal != nil {
		t := *f.Temporal
		t.Inside, t.Outside = shiftTime(t.Inside, d), shiftTime(t.Outside, d)
		c.Temporal = &t
	}
	return &c
}

// shiftTime moves an RFC 3339 time by d; "" and unreadable times stay.
func shiftTime(s string, d time.Duration) string {
	t, ok := parseTime(s)
	if s == "" || !ok {
		return s
	}
	return t.Add(d).UTC().Format(time.RFC3339Nano)
}

// shiftFacts moves the "t" annotations of facts by d. Facts without one
// go out exactly as written; the others are re-encoded.
func shiftFacts(facts []json.RawMessage, d time.Duration) []json.RawMessage {
	out := make([]json.RawMessage, len(facts))
	for i, raw := range facts {
		out[i] = raw
		var fields map[string]json.RawMessage
		if json.Unmarshal(raw, &fields) != nil || fields["t"] == nil {
			continue
		}
		var t map[string]json.RawMessage
		if json.Unmarshal(fields["t"], &t) != nil {
			continue
		}
		for k, v := range t {
			t[k] = shiftBound(v, d)
		}
		tb, err := json.Marshal(t)
		if err != nil {
			continue
		}
		fields["t"] = tb
		if b, err := json.Marshal(fields); err == nil {
			out[i] = b
		}
	}
	return out
}

// shiftBound moves one temporal bound: an RFC 3339 string or epoch
// milliseconds. "_", "now" and anything else stay.
func shiftBound(raw json.RawMessage, d time.Duration) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return raw
	}
	switch x := v.(type) {
	case string:
		if _, ok := parseTime(x); !ok {
			return raw
		}
		b, _ := json.Marshal(shiftTime(x, d))
		return b
	case json.Number:
		ms, err := strconv.ParseInt(string(x), 10, 64)
		if err != nil {
			return raw
		}
		return json.RawMessage(strconv.FormatInt(ms+d.Milliseconds(), 10))
	}
	return raw
}
