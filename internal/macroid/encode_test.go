package macroid

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/manglecp/manglecp/kernel"
	"github.com/manglecp/manglecp/protocol"
)

// TestIDPartsEncodeAsMarshal: the parts an id hashes, macroid's own
// types among them, are written by protocol.AppendJSON as json.Marshal
// writes them (protocol's tests and fuzz target hold AppendJSON to
// json.Marshal for every other value).
func TestIDPartsEncodeAsMarshal(t *testing.T) {
	at := time.Date(2026, 2, 19, 14, 30, 5, 123, time.UTC)
	var nilTime *time.Time
	for _, v := range []any{
		InputSchema([]kernel.Param{{Name: "url", Type: "string", Description: "the <page>", Required: true, Enum: []any{"a", "b"}, Default: "a"}, {Name: "n", Type: "number", Default: json.Number("3")}}),
		[]any{"t", "act", InputSchema(nil), []string(nil), false, nilTime, &at, "intent", map[string]any(nil), "digest"},
	} {
		got, err := protocol.AppendJSON([]byte("x"), v)
		want, werr := json.Marshal(v)
		if err != nil || werr != nil || !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Errorf("AppendJSON(%#v) = %s %v, json.Marshal %s %v", v, got, err, want, werr)
		}
	}
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
