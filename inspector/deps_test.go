package inspector_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports: the inspector imports the protocol and client packages of
// this module and the standard library, nothing else: it works against any
// server and never links the server or the Mangle engine.
func TestImports(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not available")
	}
	const mod = "github.com/manglecp/manglecp"
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, mod+"/inspector").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, imp := range strings.Fields(string(out)) {
		switch {
		case imp == mod+"/protocol", imp == mod+"/client":
		case !strings.Contains(strings.SplitN(imp, "/", 2)[0], "."): // standard library
		default:
			t.Errorf("inspector imports %s", imp)
		}
	}
	deps, err := exec.Command("go", "list", "-deps", mod+"/inspector").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, deps)
	}
	for _, d := range strings.Fields(string(deps)) {
		// internal/parallel and internal/freelist, leaves of the standard
		// library, come with the protocol and transport layers.
		leaf := d == mod+"/internal/parallel" || d == mod+"/internal/freelist" || d == mod+"/internal/clip" || d == mod+"/internal/peerkey" || d == mod+"/internal/tailbuf"
		if d == mod || !leaf && (strings.HasPrefix(d, "codeberg.org/TauCeti/mangle-go") || strings.HasPrefix(d, mod+"/internal/")) {
			t.Errorf("inspector links %s", d)
		}
	}
}
