package author

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"
	"github.com/manglecp/manglecp/domains/gateway"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/upstream"
	"github.com/manglecp/manglecp/upstream/upstreamtest"
)

// TestAdoptWritesCheckedRules: adopt connects to the everything server
// and writes rules that `manglecp check` accepts, every tool reachable.
func TestAdoptWritesCheckedRules(t *testing.T) {
	t.Parallel()
	bin, _ := filepath.Abs("../../../../.cache/npm-gateway/node_modules/.bin/mcp-server-everything")
	if _, err := os.Stat(bin); err != nil {
		testenv.Missing(t, "mcp-server-everything (scripts/deps/npm_gateway.sh)")
	}
	testenv.LookPath(t, "node")
	dir := filepath.Join(t.TempDir(), "ev-rules")
	var out, errb bytes.Buffer
	if code := commands.Main(context.Background(), clitest.Env(t), []string{"adopt", "ev", "--out", dir, "--", bin}, nil, &out, &errb); code != 0 {
		t.Fatalf("adopt = %d: %s%s", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := commands.Main(context.Background(), clitest.Env(t), []string{"check", dir, "--actions", "ev"}, nil, &out, &errb); code != 0 {
		t.Fatalf("check = %d: %s%s", code, out.String(), errb.String())
	}
	domain, _ := os.ReadFile(filepath.Join(dir, "domain", "ev.mg"))
	policy, _ := os.ReadFile(filepath.Join(dir, "policy", "ev.mg"))
	for _, line := range strings.Split(string(domain), "\n") {
		if strings.HasPrefix(line, "tool(") {
			name := strings.TrimSuffix(strings.TrimPrefix(line, "tool("), ").")
			if !strings.Contains(string(domain), ", "+name+", ") {
				t.Errorf("%s is reachable from no intent", name)
			}
		}
	}
	if !strings.Contains(string(policy), "requires_confirmation") && strings.Contains(string(domain), "ev_change") {
		t.Error("destructive tools without confirmation")
	}
}

// TestCheckPassesOnEmbeddedPacks: the rules the gateway assembles from
// its own rules, the three embedded packs and the catalogues of the real
// servers' recorded tool lists pass `manglecp check` (with the actions the
// gateway registers: one per upstream).
func TestCheckPassesOnEmbeddedPacks(t *testing.T) {
	t.Parallel()
	var ups []gateway.Upstream
	for name, pack := range map[string]string{"fs": "filesystem", "pw": "playwright", "ev": "everything"} {
		file := clitest.Repo("domains", "gateway", "testdata", "tools", pack+".json")
		ups = append(ups, gateway.Upstream{Pack: pack, Config: upstream.Config{Name: name, Dial: func(ctx context.Context) (mcp.Transport, func(), error) {
			s, err := upstreamtest.Recorded(file, "recorded")
			if err != nil {
				return nil, nil, err
			}
			ct, st := mcp.NewInMemoryTransports()
			ss, err := s.Connect(ctx, st, nil)
			if err != nil {
				return nil, nil, err
			}
			return ct, func() { _ = ss.Close() }, nil
		}}})
	}
	g, err := gateway.Open(context.Background(), gateway.Config{Upstreams: ups})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	dir := clitest.CopyFS(t, g.Rules(), nil)
	var out, errb bytes.Buffer
	if code := commands.Main(context.Background(), clitest.Env(t), []string{"check", dir, "--actions", "fs,pw,ev"}, nil, &out, &errb); code != 0 {
		t.Fatalf("check = %d:\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "9 intents") {
		t.Errorf("check: %s", out.String())
	}
}
