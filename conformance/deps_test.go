package conformance_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies: the suite links neither the Mangle engine, nor this
// module's internal packages, nor the server (the root package), so that it
// judges foreign servers honestly and stays small. From this module it may
// import protocol, client and transport only (CONTRIBUTING.md section 2, rule 3),
// and the standard library leaves (internal/parallel, internal/freelist, internal/clip, internal/peerkey, internal/tailbuf) through them: leaves of the
// standard library, which the protocol and transport layers use.
func TestDependencies(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not available")
	}
	const mod = "github.com/manglecp/manglecp"
	out, err := exec.Command("go", "list", "-deps", mod+"/conformance").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	allowed := map[string]bool{mod + "/protocol": true, mod + "/client": true, mod + "/transport": true, mod + "/conformance": true}
	forbidden := []string{"codeberg.org/TauCeti/mangle-go", "github.com/google/mangle", mod + "/internal/"}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list printed no dependencies")
	}
	for _, dep := range deps {
		if dep == mod+"/internal/parallel" || dep == mod+"/internal/freelist" || dep == mod+"/internal/clip" || dep == mod+"/internal/peerkey" || dep == mod+"/internal/tailbuf" {
			continue
		}
		if dep == mod {
			t.Errorf("conformance depends on the server package %s", dep)
		}
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("conformance depends on %s", dep)
			}
		}
		if strings.HasPrefix(dep, mod+"/") && !allowed[dep] {
			t.Errorf("conformance depends on %s; it may import protocol, client and transport only", dep)
		}
	}
}
