package store_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/store"
)

var key = []byte("a store key of the deployment")

func TestSealOpen(t *testing.T) {
	rec := []byte(`{"v":1,"id":"m1"}`)
	sealed := store.Seal(key, "manglecp:m:m1", rec)
	got, err := store.Open(key, "manglecp:m:m1", sealed)
	if err != nil || !bytes.Equal(got, rec) {
		t.Fatalf("open: %q %v", got, err)
	}
	flip := func(i int) []byte {
		b := bytes.Clone(sealed)
		b[i] ^= 1
		return b
	}
	for _, tc := range []struct {
		name   string
		key    []byte
		at     string
		sealed []byte
	}{
		{"another name", key, "manglecp:m:m2", sealed},
		{"another prefix", key, "other:m:m1", sealed},
		{"another key", []byte("another store key of someone"), "manglecp:m:m1", sealed},
		{"record changed", key, "manglecp:m:m1", flip(len(sealed) - 3)},
		{"tag changed", key, "manglecp:m:m1", flip(5)},
		{"unknown frame", key, "manglecp:m:m1", flip(0)},
		{"truncated", key, "manglecp:m:m1", sealed[:20]},
		{"empty", key, "manglecp:m:m1", nil},
		{"unsealed record", key, "manglecp:m:m1", append(bytes.Repeat([]byte(" "), 40), rec...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := store.Open(tc.key, tc.at, tc.sealed); got != nil || !errors.Is(err, store.ErrRejected) {
				t.Errorf("got %q %v, want store.ErrRejected", got, err)
			}
		})
	}
}

// TestSealBindsNameLength: a name and a record cannot trade bytes.
func TestSealBindsNameLength(t *testing.T) {
	sealed := store.Seal(key, "ab", []byte("cd"))
	forged := append([]byte{sealed[0]}, sealed[1:33]...)
	forged = append(forged, 'd')
	if _, err := store.Open(key, "abc", forged); !errors.Is(err, store.ErrRejected) {
		t.Errorf("name ab + record cd opened as name abc + record d: %v", err)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	until := time.Date(2026, 2, 19, 14, 35, 0, 0, time.UTC)
	r := &store.Record{ID: "t-1", Intent: protocol.Intent{Name: "diagnose_error", Params: map[string]any{"n": 1}},
		Facts: []byte(`[{"pred":"p","args":[1]}]`), Schema: map[string]any{"type": "object"},
		Created: until.Add(-time.Minute), Expires: until, Owner: "alice",
		Tool: store.Tool{Name: "t", Action: "a", RequiresConfirmation: true, ValidUntil: &until,
			Params: []store.Param{{Name: "x", Type: "string", Required: true, Enum: []any{"a"}}}}}
	raw, err := store.EncodeRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(raw), `{"v":1,`) {
		t.Errorf("the version does not lead: %s", raw)
	}
	got, err := store.DecodeRecord(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "t-1" || !got.Tool.RequiresConfirmation || got.Owner != "alice" || !got.Tool.ValidUntil.Equal(until) ||
		got.Intent.Params["n"] != json.Number("1") || len(got.Tool.Params) != 1 || !got.Tool.Params[0].Required {
		t.Errorf("round trip: %+v", got)
	}
}

// TestUnknownRecordVersion: a record of another version, or of none (as
// written before records had one), is refused, never read into this
// version's fields.
func TestUnknownRecordVersion(t *testing.T) {
	for _, raw := range []string{
		`{"v":2,"id":"t-1","tool":{"name":"t","action":"a"}}`,
		`{"v":0,"id":"t-1"}`,
		`{"id":"t-1","tool":{"Name":"t","Action":"a","RequiresConfirmation":false}}`,
		`{"v":"1","id":"t-1"}`,
		`{"v":2,"id":{"renamed":"in v2"}}`,
		`not json`,
	} {
		if r, err := store.DecodeRecord([]byte(raw)); r != nil || !errors.Is(err, store.ErrRejected) {
			t.Errorf("%s: %+v %v, want store.ErrRejected", raw, r, err)
		}
	}
}

// TestCheckKey: sixteen "a"s, a short key, a repeated pair and a run of
// consecutive characters are refused; random and passphrase keys pass.
func TestCheckKey(t *testing.T) {
	for key, ok := range map[string]bool{
		"aaaaaaaaaaaaaaaa":                   false,
		"short":                              false,
		"abababababababababab":               false,
		"abcdefghijklmnopqrstuvwxyz":         false,
		"0123456789012345":                   false,
		"zyxwvutsrqponmlkjih":                false,
		"shared store key of the deployment": true,
		"a key shared by every replica":      true,
		"kP3x9Qm2vZ7rT1wY8bN4":               true,
		"0123456789abcdef":                   false,
	} {
		if err := store.CheckKey([]byte(key)); (err == nil) != ok {
			t.Errorf("CheckKey(%q) = %v, want ok %v", key, err, ok)
		}
	}
}
