package manglecp_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/transport"
)

// The server satisfies the transport's Handler without naming it.
var _ transport.Handler = (*manglecp.Server)(nil)

// TestLayering writes the dependency rules of CONTRIBUTING.md section 2 as a
// table: transports know the protocol layer, the protocol layer knows the
// kernel, never the reverse; only the kernel and factcodec link Mangle.
func TestLayering(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not available")
	}
	const mod = "github.com/manglecp/manglecp"
	const mangle = "codeberg.org/TauCeti/mangle-go"
	const cmdPkg = mod + "/cmd/manglecp/internal/"
	rules := []struct {
		pkg       string
		forbidden []string
	}{
		{mod + "/protocol", []string{mangle, mod + "/internal/", mod + "/transport", mod + "/domains/"}},
		{mod + "/transport", []string{mangle, mod + "/internal/", mod + "/domains/"}},
		{mod, []string{mod + "/transport", mod + "/domains/", mod + "/cmd/", mod + "/store/", "github.com/redis/go-redis/v9"}},
		// The store contract and the Redis store link neither the server
		// (which links the kernel) nor the engine (issue 30).
		{mod + "/store", []string{mangle, mod + "/kernel", mod + "/transport", mod + "/domains/"}},
		{mod + "/store/redis", []string{mangle, mod + "/kernel", mod + "/transport", mod + "/domains/", mod + "/cmd/"}},
		{mod + "/kernel", []string{mod + "/transport", mod + "/domains/"}},
		{mod + "/kernel/factcodec", []string{mod + "/kernel", mod + "/transport"}},
		// The kernel's own rule files know nothing.
		{mod + "/kernel/rules", []string{mangle, mod + "/"}},
		// The browser executor knows CDP only: no protocol, server or engine.
		{mod + "/domains/browser/chrome", []string{mangle, mod + "/internal/", mod + "/transport", mod + "/protocol", mod + "/client"}},
		{mod + "/cmd/internal/attack", []string{mangle, mod, mod + "/kernel", mod + "/domains/"}},
		// The MCP bridge talks MangleCP through the client package only, so
		// it bridges to any server and never links the engine. (The root
		// package is checked below: its path prefixes every package.)
		{mod + "/mcpbridge", []string{mangle, mod + "/internal/", mod + "/domains/", mod + "/conformance"}},
		// The CPU attack client speaks HTTP only.
		{mod + "/scripts/attack-cpu", []string{mangle, mod + "/internal/", mod + "/domains/"}},
		{mod + "/domains/workspace", []string{mod + "/transport", mod + "/client", mod + "/cmd/", mod + "/domains/browser"}},
		{mod + "/inspector", []string{mangle, mod + "/internal/", mod + "/domains/", mod + "/conformance"}}, // and never the root: inspector/deps_test.go
		// The parallel helper and the free list are leaves of the standard
		// library, which any layer may use (they are exempt from the rules
		// on internal/ above).
		{mod + "/internal/parallel", []string{mangle, mod}},
		{mod + "/internal/freelist", []string{mangle, mod}},
		{mod + "/internal/clip", []string{mangle, mod}},
		{mod + "/internal/peerkey", []string{mangle, mod}},
		{mod + "/internal/tailbuf", []string{mangle, mod}},
		// The atomic write and escape test the file domains share on an os.Root.
		{mod + "/internal/rootfile", []string{mangle, mod}},
		// The one child-process supervisor (upstreams, language servers).
		{mod + "/internal/child", []string{mangle, mod}},
		// The one connect-on-demand dialer (the MCP bridge, upstreams).
		{mod + "/internal/ondemand", []string{mangle, mod}},
		{mod + "/internal/lru", []string{mangle, mod + "/protocol", mod + "/kernel"}},
		// Whole-word matching, shared by the workspace and gateway domains.
		{mod + "/internal/words", []string{mangle, mod}},
		// Schema errors are worded once for the server, the bridge and the
		// gateway: a leaf over the protocol layer (exempt, like the two
		// above, from the rules on internal/).
		{mod + "/internal/schemaerr", []string{mangle, mod + "/internal/", mod + "/transport", mod + "/domains/", mod + "/client"}},
		// The root package's jobs split out (issue 30) are leaves: they know
		// neither the server nor a transport. OAuth verification knows JWTs
		// only.
		{mod + "/internal/oauth", []string{mangle, mod}},
		// The memory store knows the store contract only (as store/redis).
		{mod + "/internal/memstore", []string{mangle, mod + "/kernel", mod + "/transport", mod + "/domains/", mod + "/client"}},
		// macro_ids hash the kernel's tool over the protocol layer; never
		// the server, a store or a transport.
		{mod + "/internal/macroid", []string{mod + "/transport", mod + "/domains/", mod + "/client", mod + "/store", mod + "/internal/memstore", mod + "/internal/admission"}},
		// The fact set of request decoding knows the protocol layer only.
		{mod + "/internal/factset", []string{mangle, mod + "/kernel", mod + "/transport", mod + "/domains/", mod + "/client", mod + "/store"}},
		// Macro-tool definitions, their records and the decoded cache know
		// the kernel's tool, the protocol layer and the store contract;
		// never the server, a transport or the other split-out jobs.
		{mod + "/internal/macros", []string{mod + "/transport", mod + "/domains/", mod + "/client", mod + "/internal/memstore", mod + "/internal/admission", mod + "/internal/oauth"}},
		// The Prometheus collectors know the protocol layer only.
		{mod + "/internal/metrics", []string{mangle, mod + "/kernel", mod + "/transport", mod + "/domains/", mod + "/client", mod + "/store"}},
		// Rendering knows the kernel's results, the protocol layer and
		// macro definitions; never the server, a store or a transport.
		{mod + "/internal/render", []string{mod + "/transport", mod + "/domains/", mod + "/client", mod + "/internal/memstore", mod + "/internal/admission", mod + "/internal/oauth", mod + "/internal/metrics"}},
		// Admission (evaluation slots, failed-login budgets) knows the
		// rate-limit buckets only.
		{mod + "/internal/admission", []string{mangle, mod + "/protocol", mod + "/kernel", mod + "/transport", mod + "/domains/", mod + "/client", mod + "/store"}},
		// The upstream supervisor knows MCP only (issue 31); the gateway
		// domain reaches upstreams through it, never through the bridge.
		{mod + "/upstream", []string{mangle, mod}},
		{mod + "/domains/gateway", []string{mod + "/transport", mod + "/client", mod + "/cmd/", mod + "/mcpbridge", mod + "/domains/browser", mod + "/domains/workspace"}},
		// The command: what every command shares knows the client and
		// protocol layers only; the client commands (manifest, eval, invoke,
		// conformance) never link the server or the engine; no command
		// group imports another (each reaches the server through serverconf).
		{cmdPkg + "cmdline", []string{mangle, mod + "/kernel", mod + "/domains/", mod + "/store", mod + "/serve", cmdPkg}},
		{cmdPkg + "remote", []string{mangle, mod + "/kernel", mod + "/domains/", mod + "/store", mod + "/serve", cmdPkg + "serverconf", cmdPkg + "serve", cmdPkg + "author", cmdPkg + "mcp", cmdPkg + "inspect"}},
		{cmdPkg + "serverconf", []string{cmdPkg + "serve", cmdPkg + "remote", cmdPkg + "author", cmdPkg + "mcp", cmdPkg + "inspect", cmdPkg + "cli"}},
		{cmdPkg + "serve", []string{cmdPkg + "remote", cmdPkg + "author", cmdPkg + "mcp", cmdPkg + "inspect", cmdPkg + "cli"}},
		{cmdPkg + "author", []string{cmdPkg + "serve", cmdPkg + "remote", cmdPkg + "mcp", cmdPkg + "inspect", cmdPkg + "cli"}},
		{cmdPkg + "mcp", []string{cmdPkg + "serve", cmdPkg + "remote", cmdPkg + "author", cmdPkg + "inspect", cmdPkg + "cli"}},
		{cmdPkg + "inspect", []string{cmdPkg + "serve", cmdPkg + "remote", cmdPkg + "author", cmdPkg + "mcp", cmdPkg + "cli"}},
	}
	// The kernel's stages import earlier stages only (load, analyse, plan,
	// eval, explain), never a later one or the kernel facade.
	stages := []string{"load", "analyse", "plan", "eval", "explain"}
	for i, s := range stages {
		pkg := mod + "/kernel/" + s
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		later := map[string]bool{mod + "/kernel": true}
		for _, l := range stages[i+1:] {
			later[mod+"/kernel/"+l] = true
		}
		for _, dep := range strings.Fields(string(out)) {
			if later[dep] {
				t.Errorf("kernel stage %s depends on %s", pkg, dep)
			}
		}
	}
	// Leaves any layer may use: the standard library's helpers (parallel
	// work, the free list, the one clipping function, the one peer key,
	// the tail of a child's stderr, the child-process supervisor, the
	// on-demand dialer, the settings tags) and the schema error wording
	// over the protocol layer, and the one JSON-Schema setup
	// (internal/schema).
	leaves := map[string]bool{}
	for _, p := range []string{"parallel", "freelist", "schemaerr", "schema", "clip", "peerkey", "tailbuf", "child", "ondemand", "settings"} {
		leaves[mod+"/internal/"+p] = true
	}
	for _, r := range rules {
		out, err := exec.Command("go", "list", "-deps", r.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", r.pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == r.pkg || leaves[dep] {
				continue
			}
			if (r.pkg == mod+"/mcpbridge" || r.pkg == cmdPkg+"cmdline" || r.pkg == cmdPkg+"remote") && dep == mod {
				t.Errorf("%s depends on the server (root package)", r.pkg)
			}
			for _, f := range r.forbidden {
				prefix := strings.HasSuffix(f, "/") && strings.HasPrefix(dep, f)
				if prefix || dep == f || strings.HasPrefix(dep, f+"/") {
					t.Errorf("%s depends on %s", r.pkg, dep)
				}
			}
		}
	}
}
