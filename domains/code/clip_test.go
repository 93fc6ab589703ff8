package code

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestEchoedTextIsCutAtRuneBoundaries: every place the code domain shortens
// text it echoes (error data, a client's path, a diagnostic's message, a
// line of source) cuts at a rune boundary with the project's one ellipsis.
func TestEchoedTextIsCutAtRuneBoundaries(t *testing.T) {
	long := strings.Repeat("é", 400) // 800 bytes, every cut at an odd byte splits a rune
	tests := []struct {
		name string
		got  string
		max  int
	}{
		{"error data", fail(CodeNotMovable, "", map[string]any{"reason": "x" + long}, "refused").Details.Data["reason"].(string), 512},
		{"path", bounded("x" + long), 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !utf8.ValidString(tt.got) {
				t.Fatalf("cut inside a UTF-8 character: %q", tt.got[len(tt.got)-8:])
			}
			if !strings.HasSuffix(tt.got, "...") || len(tt.got) > tt.max+3 {
				t.Fatalf("got %d bytes ending %q, want at most %d+3 ending with ...", len(tt.got), tt.got[len(tt.got)-5:], tt.max)
			}
		})
	}
}
