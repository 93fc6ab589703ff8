package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/domains/gateway"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/upstream"
)

// npmBin returns the path of an npm package's program installed by
// scripts/deps (npm.sh into .cache/npm, npm_gateway.sh into
// .cache/npm-gateway), or skips (fails under MANGLECP_TEST_REQUIRE=1).
func npmBin(t *testing.T, cache, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", ".cache", cache, "node_modules", ".bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		testenv.Missing(t, name+" (scripts/deps/npm.sh, scripts/deps/npm_gateway.sh)")
	}
	testenv.LookPath(t, "node")
	return p
}

func filesystemUpstream(t *testing.T, root string) gateway.Upstream {
	return gateway.Upstream{Config: upstream.Config{Name: "fs", Command: []string{npmBin(t, "npm", "mcp-server-filesystem"), root}}}
}

func everythingUpstream(t *testing.T) gateway.Upstream {
	return gateway.Upstream{Config: upstream.Config{Name: "ev", Command: []string{npmBin(t, "npm-gateway", "mcp-server-everything")}}}
}

func playwrightUpstream(t *testing.T) gateway.Upstream {
	chromium := testenv.LookPath(t, "chromium", "chromium-browser")
	dir := t.TempDir()
	return gateway.Upstream{Config: upstream.Config{Name: "pw", Dir: dir, Command: []string{npmBin(t, "npm", "playwright-mcp"),
		"--headless", "--no-sandbox", "--isolated", "--executable-path", chromium, "--output-dir", dir},
		// Playwright MCP's start is slower than a node server's.
		ConnectTimeout: testenv.Budget(time.Minute)}}
}

// TestFilesystemPack: the MCP filesystem server behind its embedded pack:
// the intents offer the tools of their jobs, reads work, edits and moves
// need confirmation and then change the files, read_file is never offered.
func TestFilesystemPack(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("hello\nworld\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, gateway.Config{Upstreams: []gateway.Upstream{filesystemUpstream(t, root)}})
	want := map[string][]string{
		"explore_files":  {"fs_list_directory", "fs_search_files", "fs_directory_tree", "fs_get_file_info"},
		"read_files":     {"fs_read_text_file", "fs_read_multiple_files"},
		"edit_files":     {"fs_edit_file", "fs_write_file"},
		"organize_files": {"fs_move_file", "fs_create_directory"},
	}
	for intent, tools := range want {
		got := f.Eval(intent)
		for _, tool := range tools {
			if _, ok := got[tool]; !ok {
				t.Errorf("%s does not offer %s (offers %v)", intent, tool, keys(got))
			}
		}
		if _, ok := got["fs_read_file"]; ok {
			t.Errorf("%s offers the deprecated read_file", intent)
		}
		if len(got) > 10 {
			t.Errorf("%s offers %d tools", intent, len(got))
		}
	}
	// A listing becomes facts; with two files found, reading them at
	// once comes first.
	if err := os.WriteFile(filepath.Join(root, "more.txt"), []byte("more\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lr := f.OK("explore_files", nil, "fs_list_directory", map[string]any{"path": root}, false)
	listed := lr.StateDelta.Assert
	if len(listed) != 2 || listed[0].Pred != "fs_listed" {
		t.Fatalf("listing state delta = %v", listed)
	}
	read := f.Eval("read_files", listed...)
	if m := read["fs_read_multiple_files"]; m.Metadata == nil || m.Metadata.Score < 90 {
		t.Errorf("with two files listed, read_multiple_files = %+v, want score 90", m.Metadata)
	}
	path := filepath.Join(root, "notes.txt")
	r := f.OK("read_files", nil, "fs_read_text_file", map[string]any{"path": path}, false)
	if answer(r) != "hello\nworld\n" {
		t.Errorf("read = %q", answer(r))
	}
	edit := map[string]any{"path": path, "edits": []any{map[string]any{"oldText": "world", "newText": "gateway"}}}
	f.Fails("edit_files", nil, "fs_edit_file", edit, false, protocol.CodeConfirmationRequired)
	f.OK("edit_files", nil, "fs_edit_file", edit, true)
	if b, _ := os.ReadFile(path); string(b) != "hello\ngateway\n" {
		t.Errorf("after the edit: %q", b)
	}
	// The edits' fields are validated before the user is asked.
	f.Fails("edit_files", nil, "fs_edit_file", map[string]any{"path": path, "edits": []any{map[string]any{"old": "x"}}}, false, protocol.CodeSchemaValidationFailed)
	f.OK("organize_files", nil, "fs_move_file", map[string]any{"source": path, "destination": filepath.Join(root, "moved.txt")}, true)
	if _, err := os.Stat(filepath.Join(root, "moved.txt")); err != nil {
		t.Errorf("move: %v", err)
	}
	e := f.Fails("read_files", nil, "fs_read_text_file", map[string]any{"path": "/etc/passwd"}, false, gateway.CodeToolFailed)
	if strings.Contains(e.Message, root) {
		t.Errorf("the error shows the server's path %s: %s", root, e.Message)
	}
}

// TestEverythingPack: every tool of the reference server is reachable
// from one of the pack's intents; media is described, not passed on.
func TestEverythingPack(t *testing.T) {
	f := newFixture(t, gateway.Config{Upstreams: []gateway.Upstream{everythingUpstream(t)}})
	reached := map[string]bool{}
	for _, intent := range []string{"try_samples", "toggle_samples"} {
		for name := range f.Eval(intent) {
			reached[name] = true
		}
	}
	for _, u := range f.gw.Upstreams() {
		for _, tool := range u.Tools() {
			name := "ev_" + strings.ReplaceAll(tool.Name, "-", "_")
			if !reached[name] {
				t.Errorf("%s is reachable from no intent", name)
			}
		}
	}
	if r := f.OK("try_samples", nil, "ev_echo", map[string]any{"message": "hi"}, false); !strings.Contains(answer(r), "hi") {
		t.Errorf("echo = %v", r.Result)
	}
	if r := f.OK("try_samples", nil, "ev_get_tiny_image", nil, false); !strings.Contains(answer(r), "[image image/png") {
		t.Errorf("tiny image = %.200v", r.Result)
	}
	f.Fails("try_samples", nil, "ev_get_sum", map[string]any{"a": "one", "b": 2}, false, protocol.CodeSchemaValidationFailed)
}

// TestPlaywrightPack: Playwright MCP with Debian's chromium behind its
// pack: navigate (confirmation waived), then the console through
// inspect_page; running arbitrary code is never offered.
func TestPlaywrightPack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<html><body><h1>Orders</h1><script>console.error("orders failed: 404")</script></body></html>`)
	}))
	defer page.Close()
	up := playwrightUpstream(t)
	f := newFixture(t, gateway.Config{Upstreams: []gateway.Upstream{up}})
	for _, intent := range []string{"browse", "interact", "inspect_page"} {
		if _, ok := f.Eval(intent)["pw_browser_run_code_unsafe"]; ok {
			t.Errorf("%s offers browser_run_code_unsafe", intent)
		}
	}
	r := f.OK("browse", nil, "pw_browser_navigate", map[string]any{"url": page.URL}, false)
	if !strings.Contains(answer(r), "Page URL: "+page.URL) {
		t.Errorf("navigate = %.300v", r.Result)
	}
	r = f.OK("inspect_page", nil, "pw_browser_console_messages", map[string]any{}, false)
	if !strings.Contains(answer(r), "orders failed: 404") {
		t.Errorf("console = %.300v", r.Result)
	}
	if d := r.StateDelta.Assert; len(d) == 0 || d[0].Pred != "pw_console" || d[0].Args[0] != "error" {
		t.Errorf("console facts = %v", d)
	}
	if e := f.Eval("inspect_page")["pw_browser_evaluate"]; e.Safety != nil && !e.Safety.RequiresUserConfirmation {
		t.Errorf("browser_evaluate needs no confirmation")
	}
}

// TestFileServerParametersShown (issue 38, "the gateway makes a file
// server cheaper"): with adaptive disclosure, as manglecp mcp asks, every
// tool the filesystem pack offers comes with its parameters
// (create_directory's too), edit_file's edits with the fields of their
// items; and arguments that break them are refused before the user is
// asked to confirm.
func TestFileServerParametersShown(t *testing.T) {
	root := t.TempDir()
	f := newFixture(t, gateway.Config{Upstreams: []gateway.Upstream{filesystemUpstream(t, root)}})
	for _, intent := range []string{"explore_files", "read_files", "edit_files", "organize_files"} {
		resp, err := f.sess.Evaluate(context.Background(), &protocol.IntentRequest{Intent: protocol.Intent{Name: intent},
			Options: &protocol.Options{DisclosurePreference: protocol.DisclosureAdaptive}})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range resp.MacroTools {
			if m.InputSchema == nil {
				t.Errorf("%s offers %s without its parameters", intent, m.Name)
			}
		}
	}
	edit := f.Eval("edit_files")["fs_edit_file"]
	props, _ := edit.InputSchema["properties"].(map[string]any)
	edits, _ := props["edits"].(map[string]any)
	items, _ := edits["items"].(map[string]any)
	fields, _ := items["properties"].(map[string]any)
	if fields["oldText"] == nil || fields["newText"] == nil {
		t.Fatalf("edit_file's edits carry no item fields: %v", edits)
	}
	if _, ok := f.Eval("organize_files")["fs_create_directory"].InputSchema["properties"].(map[string]any)["path"]; !ok {
		t.Errorf("create_directory's path is not shown")
	}
	bad := map[string]any{"path": filepath.Join(root, "a.txt"), "edits": []any{map[string]any{"oldText": "x"}}}
	e := f.Fails("edit_files", nil, "fs_edit_file", bad, false, protocol.CodeSchemaValidationFailed)
	if e.Details == nil || len(e.Details.SchemaErrors) == 0 || !strings.Contains(e.Details.SchemaErrors[0].Path, "edits") {
		t.Errorf("details %+v: want an error at /edits/0", e.Details)
	}
}
