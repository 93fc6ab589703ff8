package client_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/protocol"
)

// TestDependencies: the client links neither the Mangle engine nor this
// module's internal packages nor the server (CONTRIBUTING.md section 2, rule 3).
// internal/parallel, internal/freelist, internal/clip, internal/peerkey and internal/tailbuf are exempt: leaves of the
// standard library, which the protocol and transport layers use.
func TestDependencies(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not available")
	}
	const mod = "github.com/manglecp/manglecp"
	out, err := exec.Command("go", "list", "-deps", mod+"/client").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{"codeberg.org/TauCeti/mangle-go", "github.com/google/mangle", mod + "/internal/", mod + "/domains/"}
	for _, dep := range strings.Fields(string(out)) {
		if dep == mod+"/internal/parallel" || dep == mod+"/internal/freelist" || dep == mod+"/internal/clip" || dep == mod+"/internal/peerkey" || dep == mod+"/internal/tailbuf" {
			continue
		}
		if dep == mod {
			t.Errorf("client depends on the server package %s", dep)
		}
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("client depends on %s", dep)
			}
		}
	}
}

// TestConfirmationToken: the token is the server's format, bound to the
// macro_id, and expires ttl from now.
func TestConfirmationToken(t *testing.T) {
	tests := []struct {
		name    string
		key     []byte
		macroID string
		verify  string
		ok      bool
	}{
		{"same key and macro", testKey, "m-1", "m-1", true},
		{"another macro", testKey, "m-1", "m-2", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok := client.ConfirmationToken(tc.key, tc.macroID, 2*time.Minute)
			p, err := protocol.VerifyConfirmationToken(testKey, tok, tc.verify)
			if (err == nil) != tc.ok {
				t.Fatalf("verify: %v", err)
			}
			if err == nil {
				if d := time.Until(p.Expiry); d < 110*time.Second || d > 2*time.Minute {
					t.Errorf("expires in %v, want about 2m", d)
				}
			}
		})
	}
}
