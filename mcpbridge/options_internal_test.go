package mcpbridge

import "testing"

// TestOneOf: an empty option takes its default, a known one stays, an
// unknown one is refused with the choices in the message.
func TestOneOf(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{"", "auto", ""},
		{"meta", "meta", ""},
		{"sometimes", "sometimes", `unknown mode "sometimes": use auto, dynamic or meta`},
	}
	for _, tt := range tests {
		m := Mode(tt.in)
		perr := oneOf(&m, "mode", ModeAuto, ModeDynamic, ModeMeta)
		got := ""
		if perr != nil {
			got = perr.Message
			if perr.Code != CodeInvalidArguments {
				t.Errorf("%q: code %s", tt.in, perr.Code)
			}
		}
		if string(m) != tt.want || got != tt.err {
			t.Errorf("oneOf(%q) = %q, %q; want %q, %q", tt.in, m, got, tt.want, tt.err)
		}
	}
}
