package gateway_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/domains/gateway"
	"github.com/manglecp/manglecp/upstream"
	"github.com/manglecp/manglecp/upstream/upstreamtest"
)

// recorded serves, in process, the tool list a real server answered
// (testdata/tools/PACK.json, recorded with the MCP Inspector CLI from the
// versions scripts/deps installs), every tool answering "ok".
func recorded(t *testing.T, name, pack string) gateway.Upstream {
	file := filepath.Join("testdata", "tools", pack+".json")
	if _, err := upstreamtest.Recorded(file, "recorded-"+pack); err != nil {
		t.Fatal(err)
	}
	return gateway.Upstream{Pack: pack, Config: upstream.Config{Name: name, Dial: func(ctx context.Context) (mcp.Transport, func(), error) {
		s, err := upstreamtest.Recorded(file, "recorded-"+pack)
		if err != nil {
			return nil, nil, err
		}
		ct, st := mcp.NewInMemoryTransports()
		ss, err := s.Connect(ctx, st, nil)
		if err != nil {
			return nil, nil, err
		}
		return ct, func() { _ = ss.Close() }, nil
	}}}
}

// maxPerIntent is the most tools one intent of an embedded pack offers
// on the real servers' tool lists (docs/gateway.md says so).
const maxPerIntent = 10

// TestPacksOnRecordedTools: the embedded packs load (the same contract
// checks as manglecp check) on the tool lists of the real servers, all
// three at once, and every tool is reachable from one of their intents
// except those a pack's policy prohibits; without npm or a browser.
func TestPacksOnRecordedTools(t *testing.T) {
	f := newFixture(t, gateway.Config{Upstreams: []gateway.Upstream{
		recorded(t, "fs", "filesystem"), recorded(t, "pw", "playwright"), recorded(t, "ev", "everything")}})
	prohibited := map[string]bool{"fs_read_file": true, "pw_browser_run_code_unsafe": true}
	reached := map[string]bool{}
	for _, in := range f.srv.Manifest().Intents {
		offered := f.Eval(in.Name)
		// docs/gateway.md: each pack intent offers at most maxPerIntent
		// tools, what the model reads at every turn.
		if len(offered) > maxPerIntent {
			t.Errorf("intent %s offers %d tools, more than the %d docs/gateway.md promises: %v", in.Name, len(offered), maxPerIntent, keys(offered))
		}
		for name := range offered {
			reached[name] = true
		}
	}
	if n := len(f.srv.Manifest().Intents); n != 9 {
		t.Errorf("%d intents, want 9 (4 filesystem, 3 playwright, 2 everything)", n)
	}
	total := 0
	for _, u := range f.gw.Upstreams() {
		for _, tool := range u.Tools() {
			total++
			name := gatewayName(u.Name(), tool.Name)
			if reached[name] == prohibited[name] {
				t.Errorf("%s: reached %v, prohibited %v", name, reached[name], prohibited[name])
			}
		}
	}
	if total < 50 {
		t.Errorf("%d tools recorded", total)
	}
	// A pack's policy at work: navigation is waived, evaluate is not.
	browse := f.Eval("browse")
	if s := browse["pw_browser_navigate"].Safety; s == nil || s.RequiresUserConfirmation {
		t.Errorf("navigate safety %+v: confirmation waived by the pack", s)
	}
	if s := f.Eval("inspect_page")["pw_browser_evaluate"].Safety; s != nil && !s.RequiresUserConfirmation {
		t.Errorf("evaluate needs no confirmation")
	}
	if s := f.Eval("edit_files")["fs_edit_file"].Safety; s == nil || !s.RequiresUserConfirmation {
		t.Errorf("edit_file safety %+v: destructive, needs confirmation", s)
	}
}

func gatewayName(up, tool string) string {
	out := []byte(up + "_")
	last := byte('_')
	for i := 0; i < len(tool); i++ {
		c := tool[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			c = '_'
		}
		if c == '_' && last == '_' {
			continue
		}
		out = append(out, c)
		last = c
	}
	return string(out)
}
