package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestNewDomainRuns writes the scaffold into an empty directory and uses
// it as its author would: its own test passes, `manglecp check` accepts
// its rules, and the built program serves with the library defaults (its
// stderr says where it listens); `manglecp eval` gets both tools and
// `manglecp invoke --confirm` runs the confirmed one with the key the
// server took from the user's key file. The scaffold's go.mod requires the
// released module, as a user's would; the test points a go.work at this
// checkout instead.
func TestNewDomainRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	t.Setenv("MANGLECP_CONFIRMATION_KEY", "")
	dir := filepath.Join(work, "incidents")
	if code, out, errOut := run(t, "", "new", "domain", "incidents", "--dir", dir); code != exitOK {
		t.Fatalf("new: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := run(t, "", "new", "domain", "incidents", "--dir", dir); code != 1 || !strings.Contains(errOut, "not empty") {
		t.Fatalf("new into a non-empty directory: exit %d %s", code, errOut)
	}
	// The guide's figure: a two-tool domain with one confirmed tool in at
	// most 60 lines of rules and Go (neither blank nor comments).
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
	if lines != 55 {
		t.Errorf("the scaffold has %d lines of rules and Go; docs/write-a-domain.md says 55 (at most 60)", lines)
	}
	goWork := "go 1.26.8\n\nuse ./incidents\n\nreplace github.com/manglecp/manglecp => " + repo + "\n"
	if err := os.WriteFile(filepath.Join(work, "go.work"), []byte(goWork), 0o644); err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "go.work.sum"), sums, 0o644); err != nil {
		t.Fatal(err)
	}
	goCmd := func(args ...string) {
		t.Helper()
		cmd := exec.Command(gobin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(work, "go.work"), "GOFLAGS=", "GOPROXY=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	goCmd("vet", "./...")
	goCmd("test", "-count=1", "./...")
	goCmd("build", "-o", filepath.Join(work, "incidents-server"), ".")

	if code, out, errOut := run(t, "", "check", dir, "--actions", "show_logs,rollback"); code != exitOK {
		t.Fatalf("check: exit %d\n%s%s", code, out, errOut)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := exec.CommandContext(ctx, filepath.Join(work, "incidents-server"))
	srv.Env = append(os.Environ(), "ADDR=127.0.0.1:0", "XDG_CONFIG_HOME="+config, "MANGLECP_CONFIRMATION_KEY=")
	stderr, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = srv.Process.Signal(os.Interrupt)
		_ = srv.Wait()
	}()
	listening := regexp.MustCompile(`level=INFO msg="serving MangleCP" addr=(127\.0\.0\.1:\d+)`)
	var addr string
	var log strings.Builder
	for sc := bufio.NewScanner(stderr); addr == "" && sc.Scan(); {
		log.WriteString(sc.Text() + "\n")
		if m := listening.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatalf("the server never said where it listens:\n%s", log.String())
	}
	go func() { _, _ = bufio.NewReader(stderr).WriteTo(discard{}) }()
	target := "http://" + addr

	facts := filepath.Join(work, "facts.json")
	if err := os.WriteFile(facts, []byte(`[{"pred":"incident","args":["INC-7","payments"]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "", "eval", target, "--intent", "triage", "--facts", facts, "--json")
	if code != exitOK {
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
	if code, out, errOut := run(t, "", "invoke", target, "--macro", ids["rollback"], "--args", `{"service":"payments"}`, "--json"); code == exitOK {
		t.Fatalf("rollback ran without confirmation:\n%s%s", out, errOut)
	}
	code, out, errOut = run(t, "", "invoke", target, "--macro", ids["rollback"], "--args", `{"service":"payments"}`, "--confirm", "--json")
	if code != exitOK || !strings.Contains(out, `"rolled_back": "payments"`) {
		t.Fatalf("invoke --confirm: exit %d\n%s%s", code, out, errOut)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
