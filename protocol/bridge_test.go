package protocol

import (
	"strconv"
	"strings"
	"testing"
)

func TestBridgeCodes(t *testing.T) {
	md := RegistryMarkdown()
	seen := map[Code]bool{}
	for _, c := range Codes() {
		seen[c.Code] = true
	}
	for _, c := range BridgeCodes() {
		t.Run(string(c.Code), func(t *testing.T) {
			if !strings.HasPrefix(string(c.Code), "x-") {
				t.Errorf("bridge code %q is not a custom code (Spec 09 section 3.2)", c.Code)
			}
			if seen[c.Code] {
				t.Errorf("code %q registered twice", c.Code)
			}
			seen[c.Code] = true
			info, ok := Lookup(c.Code)
			if !ok || info != c {
				t.Errorf("Lookup(%q) = %+v, %v; want %+v", c.Code, info, ok, c)
			}
			if c.Code.HTTPStatus() != c.HTTPStatus || c.Code.Recoverable() != c.Recoverable {
				t.Errorf("HTTPStatus/Recoverable of %q disagree with its entry", c.Code)
			}
			if e := Errorf(c.Code, "x"); e.Recoverable != c.Recoverable {
				t.Errorf("Errorf(%q).Recoverable = %v", c.Code, e.Recoverable)
			}
			if !strings.Contains(md, "| `"+string(c.Code)+"` | "+strconv.Itoa(c.HTTPStatus)+" ") {
				t.Errorf("docs/errors.md does not list %q", c.Code)
			}
		})
	}
}

func TestMCPMappingEveryCode(t *testing.T) {
	for _, c := range append(Codes(), BridgeCodes()...) {
		m := MCPMapping(c.Code)
		if m == "" {
			t.Errorf("MCPMapping(%q) is empty", c.Code)
		}
		if !strings.Contains(RegistryMarkdown(), "| "+m+" |") {
			t.Errorf("the MCP column of %q is missing from docs/errors.md", c.Code)
		}
	}
}
