package author

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
)

// TestNewDomainRuns writes the scaffold into a temporary directory outside
// this repository and uses it as its author would, with no go.work
// (GOWORK=off): go mod tidy resolves github.com/manglecp/manglecp through
// the replace directive pointing at this checkout (the test binary, like
// a manglecp built from a checkout, knows its source) and the rest through
// the machine's module proxy or cache; its own test passes, `manglecp
// check` accepts its rules and sample, and the built program serves with
// the library defaults (its stderr says where it listens); `manglecp eval`
// gets both tools and `manglecp invoke --confirm` runs the confirmed one
// with the key the server took from the user's key file. Then the rules
// stop selecting what the sample says it selects: check, the scaffold's
// test and the program's start-up all fail naming triage.json and the line
// of its "expect".
func TestNewDomainRuns(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a program")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	repo, err := filepath.Abs(clitest.Repo())
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if strings.HasPrefix(work, repo+string(filepath.Separator)) {
		t.Fatalf("the temporary directory %s is inside the repository", work)
	}
	config := t.TempDir()
	env := cmdline.MapEnv(map[string]string{"XDG_CONFIG_HOME": config}) // the server's key file, which invoke --confirm reads
	dir := filepath.Join(work, "incidents")
	code, out, errOut := commands.RunEnv(t, env, "", "new", "domain", "incidents", "--dir", dir)
	if code != cmdline.ExitOK || !strings.Contains(out, "builds against the github.com/manglecp/manglecp source in "+repo) {
		t.Fatalf("new: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := commands.RunEnv(t, env, "", "new", "domain", "incidents", "--dir", dir); code != 1 || !strings.Contains(errOut, "not empty") {
		t.Fatalf("new into a non-empty directory: exit %d %s", code, errOut)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "replace github.com/manglecp/manglecp => " + repo + "\n"; !strings.Contains(string(mod), want) {
		t.Errorf("go.mod lacks %q:\n%s", want, mod)
	}
	readme, _ := os.ReadFile(filepath.Join(dir, "README.md"))
	for _, want := range []string{"replace github.com/manglecp/manglecp => " + repo, "delete the `replace` line", `"command": "/absolute/path/to/incidents", "args": ["mcp"]`} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("README.md lacks %q", want)
		}
	}
	// The guide's figure: a two-tool domain with one confirmed tool, served
	// over HTTP and to MCP hosts, in at most 65 lines of rules and Go
	// (neither blank nor comments).
	if lines := codeLines(t, dir); lines != scaffoldLines {
		t.Errorf("the scaffold has %d lines of rules and Go; docs/write-a-domain.md says %d", lines, scaffoldLines)
	}
	goOut := func(args ...string) (string, error) {
		cmd := exec.Command(gobin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "XDG_CONFIG_HOME="+config, "MANGLECP_CONFIRMATION_KEY=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	goRun := func(args ...string) error {
		if out, err := goOut(args...); err != nil {
			return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	goCmd := func(wantOK bool, args ...string) string {
		t.Helper()
		out, err := goOut(args...)
		if (err == nil) != wantOK {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	if err := goRun("mod", "tidy"); err != nil {
		t.Fatal(err)
	}
	// The server's build (linking is most of it) runs beside vet and the
	// scaffold's tests.
	built := make(chan error, 1)
	go func() { built <- goRun("build", "-o", filepath.Join(work, "incidents-server"), ".") }()
	for _, args := range [][]string{{"vet", "./..."}, {"test", "-count=1", "./..."}} {
		if err := goRun(args...); err != nil {
			<-built
			t.Fatal(err)
		}
	}
	if err := <-built; err != nil {
		t.Fatal(err)
	}

	if code, out, errOut := commands.RunEnv(t, env, "", "check", dir, "--actions", "show_logs,rollback"); code != cmdline.ExitOK {
		t.Fatalf("check: exit %d\n%s%s", code, out, errOut)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := exec.CommandContext(ctx, filepath.Join(work, "incidents-server"))
	srv.Env = append(os.Environ(), "ADDR=127.0.0.1:0", "XDG_CONFIG_HOME="+config, "MANGLECP_CONFIRMATION_KEY=")
	addr, _, stop := serving(t, srv, "the server")
	defer stop()

	target := "http://" + addr

	facts := filepath.Join(work, "facts.json")
	if err := os.WriteFile(facts, []byte(`[{"pred":"incident","args":["INC-7","payments"]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = commands.RunEnv(t, env, "", "eval", target, "--intent", "triage", "--facts", facts, "--json")
	if code != cmdline.ExitOK {
		t.Fatalf("eval: exit %d\n%s%s", code, out, errOut)
	}
	var res struct {
		MacroTools []struct {
			Name    string `json:"name"`
			MacroID string `json:"macro_id"`
		} `json:"macro_tools"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("eval output: %v\n%s", err, out)
	}
	ids := map[string]string{}
	for _, m := range res.MacroTools {
		ids[m.Name] = m.MacroID
	}
	if ids["show_logs"] == "" || ids["rollback"] == "" {
		t.Fatalf("eval selected %v, want show_logs and rollback", ids)
	}
	if code, out, errOut := commands.RunEnv(t, env, "", "invoke", target, "--macro", ids["rollback"], "--args", `{"service":"payments"}`, "--json"); code == cmdline.ExitOK {
		t.Fatalf("rollback ran without confirmation:\n%s%s", out, errOut)
	}
	code, out, errOut = commands.RunEnv(t, env, "", "invoke", target, "--macro", ids["rollback"], "--args", `{"service":"payments"}`, "--confirm", "--json")
	if code != cmdline.ExitOK || !strings.Contains(out, `"rolled_back": "payments"`) {
		t.Fatalf("invoke --confirm: exit %d\n%s%s", code, out, errOut)
	}

	// The rules stop selecting show_logs, which triage.json expects (its
	// line 9): check, the test and the start-up fail, naming it.
	rulesFile := filepath.Join(dir, "domain", "incidents.mg")
	rules, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(rules), `mandatory_for_intent("triage", "show_logs") :- incident(_, _).`, `mandatory_for_intent("triage", "show_logs") :- incident(_, "nothing").`, 1)
	if err := os.WriteFile(rulesFile, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	const stale = "triage.json:9: the sample request triage.json expects the tools show_logs, rollback, but these rules select rollback: show_logs no longer selected"
	if code, out, _ := commands.RunEnv(t, env, "", "check", dir, "--actions", "show_logs,rollback"); code != 1 || !strings.Contains(out, filepath.Join(dir, stale)) {
		t.Errorf("check of a stale sample: exit %d, want 1 with %q:\n%s", code, stale, out)
	}
	// Both fail, each linking a program: side by side.
	type result struct {
		out string
		err error
	}
	ran := make(chan result, 1)
	go func() { out, err := goOut("run", "."); ran <- result{out, err} }()
	if out := goCmd(false, "test", "-count=1", "./..."); !strings.Contains(out, stale) {
		t.Errorf("the scaffold's test of a stale sample lacks %q:\n%s", stale, out)
	}
	if r := <-ran; r.err == nil || !strings.Contains(r.out, stale) {
		t.Errorf("the start-up with a stale sample (%v) lacks %q:\n%s", r.err, stale, r.out)
	}
	// The facts profile no longer accepts the sample's fact (its line 7).
	reshaped := strings.Replace(string(rules), `decl_arg("incident", 1, "service", "string").`, `decl_arg("incident", 1, "service", "integer").`, 1)
	if err := os.WriteFile(rulesFile, []byte(reshaped), 0o644); err != nil {
		t.Fatal(err)
	}
	refused := "triage.json:7: the sample request triage.json fails on these rules with type_mismatch: the facts profile refuses it: 1 fact validation error: Argument 1 (service)"
	if code, out, _ := commands.RunEnv(t, env, "", "check", dir, "--actions", "show_logs,rollback"); code != 1 || !strings.Contains(out, refused) {
		t.Errorf("check of a sample the profile refuses: exit %d, want 1 with %q:\n%s", code, refused, out)
	}
}

// scaffoldLines is the scaffold's size in lines of rules and Go that are
// neither blank nor comments (docs/write-a-domain.md).
const scaffoldLines = 60

// codeLines counts the lines of rules and Go of a scaffolded domain that
// are neither blank nor comments.
func codeLines(t *testing.T, dir string) int {
	t.Helper()
	lines := 0
	for _, f := range []string{"main.go", "domain/incidents.mg", "policy/incidents.mg"} {
		raw, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(raw), "\n") {
			l = strings.TrimSpace(l)
			if l != "" && !strings.HasPrefix(l, "//") && !strings.HasPrefix(l, "#") {
				lines++
			}
		}
	}
	return lines
}

// TestNewRefusesBadModulePaths: --module must be a Go module path (issue
// 35 item 20: a newline added a directive of its own to go.mod), checked
// with the go command's own rules (golang.org/x/mod/module).
func TestNewRefusesBadModulePaths(t *testing.T) {
	t.Parallel()
	for _, m := range []string{"x\nreplace github.com/manglecp/manglecp => /tmp/evil", "has space", "tab\there", "quote\"d", "-flag", "a\x00b", "/abs", "a//b", "dot/./x"} {
		dir := filepath.Join(t.TempDir(), "d")
		code, _, errOut := commands.Run(t, "", "new", "domain", "incidents", "--dir", dir, "--module", m)
		if code != cmdline.ExitUsage || !strings.Contains(errOut, "is not a Go module path") {
			t.Errorf("--module %q: exit %d, want %d with 'is not a Go module path':\n%s", m, code, cmdline.ExitUsage, errOut)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("--module %q: wrote %s anyway", m, dir)
		}
	}
	dir := filepath.Join(t.TempDir(), "d")
	if code, _, errOut := commands.Run(t, "", "new", "domain", "incidents", "--dir", dir, "--module", "example.com/team/incidents"); code != cmdline.ExitOK {
		t.Fatalf("a valid module path: exit %d\n%s", code, errOut)
	}
	mod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
	if !strings.HasPrefix(string(mod), "module example.com/team/incidents\n") || strings.Count(string(mod), "replace") != 1 {
		t.Errorf("go.mod:\n%s", mod)
	}
}
