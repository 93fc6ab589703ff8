package protocol_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/manglecp/manglecp/protocol"
)

func TestQuoteAndClip(t *testing.T) {
	long := strings.Repeat("a", 4<<20)
	multi := strings.Repeat("é", 40) // 80 bytes, 2 per rune
	for _, tc := range []struct {
		name, in, quote, clip string
	}{
		{"short", "1999-01-draft", `"1999-01-draft"`, "1999-01-draft"},
		{"control characters escaped", "a\nb\x00\"", `"a\nb\x00\""`, "a\nb\x00\""},
		{"long cut at 64 bytes", long, `"` + long[:64] + `"...`, long[:64] + "..."},
		{"cut on a rune boundary", multi, `"` + strings.Repeat("é", 32) + `"...`, strings.Repeat("é", 32) + "..."},
		{"invalid UTF-8 escaped", "\xff", `"\xff"`, "\xff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := protocol.Quote(tc.in); got != tc.quote {
				t.Errorf("Quote = %.100q, want %.100q", got, tc.quote)
			}
			got := protocol.Clip(tc.in)
			if got != tc.clip {
				t.Errorf("Clip = %.100q, want %.100q", got, tc.clip)
			}
			if utf8.ValidString(tc.in) && !utf8.ValidString(got) {
				t.Errorf("Clip cut a rune: %q", got)
			}
		})
	}
}

// TestErrorsEchoClientTextBounded: every error that repeats a client string
// (version, type, unknown field, payload field) stays small when the string
// is 4 MB (issue 9 item 1).
func TestErrorsEchoClientTextBounded(t *testing.T) {
	big := strings.Repeat("v", 4<<20)
	for name, msg := range map[string]string{
		"version":        `{"type":"intent_request","id":"a","manglecp":"` + big + `","payload":{}}`,
		"type":           `{"type":"` + big + `","id":"a","manglecp":"2026-02-draft","payload":{}}`,
		"envelope field": `{"type":"intent_request","id":"a","manglecp":"2026-02-draft","payload":{},"` + big + `":1}`,
	} {
		_, perr := protocol.DecodeEnvelope([]byte(msg))
		if perr == nil {
			t.Fatalf("%s: accepted", name)
		}
		raw, err := protocol.ErrorEnvelope("a", perr).Encode()
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) > 2048 {
			t.Errorf("%s: the error is %d bytes, want at most 2048: %.300s", name, len(raw), raw)
		}
	}
	var p protocol.IntentRequest
	perr := protocol.DecodePayload([]byte(`{"`+big+`":1}`), &p)
	if perr == nil {
		t.Fatal("unknown payload field accepted")
	}
	if raw, _ := protocol.ErrorEnvelope("a", perr).Encode(); len(raw) > 2048 {
		t.Errorf("payload field: the error is %d bytes: %.300s", len(raw), raw)
	}
}

// TestCustomCodesHaveTheirStatus: registered x- codes carry their own
// status everywhere (issue 9 item 9: x-skill_not_found was 404 on the wire
// while the registry said 500).
func TestCustomCodesHaveTheirStatus(t *testing.T) {
	want := map[protocol.Code]int{
		protocol.CodeSkillNotFound:        404,
		protocol.CodeNotFound:             404,
		protocol.CodeMethodNotAllowed:     405,
		protocol.CodeUnsupportedMediaType: 415,
		protocol.CodeUpgradeRequired:      426,
		protocol.CodeHostNotAllowed:       421,
		protocol.CodeOriginNotAllowed:     403,
	}
	for code, status := range want {
		if got := code.HTTPStatus(); got != status {
			t.Errorf("%s: status %d, want %d", code, got, status)
		}
		if _, ok := protocol.LookupCustom(code); !ok {
			t.Errorf("%s is not registered", code)
		}
		if info, ok := protocol.Lookup(code); !ok || info.HTTPStatus != status {
			t.Errorf("Lookup(%s) = %+v, %v", code, info, ok)
		}
	}
	if n := len(protocol.CustomCodes()); n != len(want) {
		t.Errorf("%d custom codes, the test knows %d", n, len(want))
	}
	if !strings.Contains(protocol.RegistryMarkdown(), "| `x-skill_not_found` | 404 Not Found | no |") {
		t.Error("docs/errors.md does not list x-skill_not_found with 404")
	}
}
