package macroid

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/kernel"
	"github.com/manglecp/manglecp/protocol"
)

func checkAppendJSON(t *testing.T, v any) {
	t.Helper()
	got, ok := appendJSON([]byte("x"), v)
	want, err := json.Marshal(v)
	if ok != (err == nil) || (ok && !bytes.Equal(got, append([]byte("x"), want...))) {
		t.Errorf("appendJSON(%#v) = %s %v, json.Marshal %s %v", v, got, ok, want, err)
	}
}

// TestAppendJSONMatchesMarshal: the hand encoder writes json.Marshal's
// bytes for every value macro-tool ids hash, and fails where it fails.
func TestAppendJSONMatchesMarshal(t *testing.T) {
	at := time.Date(2026, 2, 19, 14, 30, 5, 123, time.UTC)
	var nilTime *time.Time
	var nilMap map[string]any
	for _, v := range []any{
		nil, "", "a", "<a&b>", "é", "\xff", "\u2028", "q\"\\", "tab\t", true, false, 0, -5, int64(math.MaxInt64),
		json.Number("12"), json.Number("-1.5e3"), json.Number(""), json.Number("01"), json.Number("x"), 2.5, math.Inf(1),
		[]any{}, []any(nil), []any{"a", 1, nil, []any{true}}, []string(nil), []string{}, []string{"none", "<x>"},
		map[string]any{}, nilMap, map[string]any{"b": 1, "a": map[string]any{"z": []any{"y"}, "<": "&"}, "B": nil},
		&at, nilTime, at, struct{ A int }{1}, make(chan int),
		InputSchema([]kernel.Param{{Name: "url", Type: "string", Description: "the <page>", Required: true, Enum: []any{"a", "b"}, Default: "a"}, {Name: "n", Type: "number", Default: json.Number("3")}}),
		[]any{"t", "act", InputSchema(nil), []string(nil), false, nilTime, &at, "intent", map[string]any(nil), "digest"},
	} {
		checkAppendJSON(t, v)
	}
}

func FuzzAppendJSON(f *testing.F) {
	f.Add(`{"a":[1,"<b>",{"c":null}],"d":true}`)
	f.Add(`["x",1.5e300,-0,"\u2028"]`)
	f.Fuzz(func(t *testing.T, in string) {
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

// oldMacroID is ID as it was, through json.Encoder.
func oldMacroID(t kernel.Tool, schema map[string]any, intent protocol.Intent, factsDigest, owner string) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	parts := []any{t.Name, t.Action, schema, t.SideEffects, t.RequiresConfirmation, t.ValidFrom, t.ValidUntil, intent.Name, intent.Params, factsDigest}
	if owner != "" {
		parts = append(parts, owner)
	}
	_ = enc.Encode(parts)
	return t.Name + "-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// TestMacroIDUnchanged: macro_ids are what they were.
func TestMacroIDUnchanged(t *testing.T) {
	from, until := time.Date(2026, 2, 19, 14, 0, 0, 0, time.UTC), time.Date(2026, 2, 19, 15, 0, 0, 5, time.FixedZone("x", 3600))
	tools := []kernel.Tool{
		{Name: "open_page", Action: "open"},
		{Name: "diagnose", Action: "diag", SideEffects: []string{"writes_file"}, RequiresConfirmation: true, ValidFrom: &from, ValidUntil: &until},
		{Name: "t<&>", Action: "é", SideEffects: []string{}},
	}
	params := [][]kernel.Param{nil, {{Name: "session", Type: "string", Enum: []any{"s1", "s2"}, Required: true}, {Name: "limit", Type: "number", Default: json.Number("10"), Description: "at most"}}}
	intents := []protocol.Intent{{Name: "diagnose_error"}, {Name: "x", Params: map[string]any{"a": json.Number("1"), "b": []any{"<c>"}}}}
	for _, tool := range tools {
		for _, ps := range params {
			for _, in := range intents {
				for _, owner := range []string{"", Owner("alice")} {
					schema := InputSchema(ps)
					if got, want := ID(tool, schema, in, "d1", owner), oldMacroID(tool, schema, in, "d1", owner); got != want {
						t.Errorf("ID(%s, %v, %v, %q) = %s, was %s", tool.Name, ps, in, owner, got, want)
					}
				}
			}
		}
	}
}
