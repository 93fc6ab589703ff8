package author

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/serverconf"
	"github.com/manglecp/manglecp/upstream"
)

// TestAdoptPrintsACommandThatRuns: the serve command adopt prints runs
// when pasted into a shell (issue 39 item 4: the upstream command was not
// quoted, so its arguments became stray arguments of serve). The upstream
// is a manglecp binary serving MCP (`manglecp mcp`, a command with
// arguments), the rules go to a directory whose name has a space and a
// quote; the printed line is run by sh, exactly as printed plus an
// --addr, and serves the adopted tools.
func TestAdoptPrintsACommandThatRuns(t *testing.T) {
	t.Parallel()
	bin := builds.Manglecp(t)
	binDir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(binDir, "manglecp")); err != nil {
		t.Fatal(err)
	}
	config := t.TempDir() // the served command's key file
	dir := filepath.Join(t.TempDir(), "it's my rules")
	code, out, errOut := commands.Run(t, "", "adopt", "self", "--out", dir, "--", bin, "mcp", "--browser-path", "none")
	if code != cmdline.ExitOK {
		t.Fatalf("adopt: exit %d\n%s%s", code, out, errOut)
	}
	var serveLine string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "manglecp serve ") {
			serveLine = l
		}
	}
	want := "manglecp serve --upstream 'self=" + bin + " mcp --browser-path none' --rules '" + strings.ReplaceAll(dir, "'", `'\''`) + "'"
	if serveLine != want {
		t.Fatalf("adopt printed\n%s\nwant the line\n%s", out, want)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "sh", "-c", "exec "+serveLine+" --addr 127.0.0.1:0")
	sh.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "XDG_CONFIG_HOME="+config)
	addr, log, stop := serving(t, sh, "the pasted command")
	defer stop()
	// The gateway serves upstreams, not the browser domain: it sets up no
	// browser and says nothing of one (issue 39 item 6).
	if strings.Contains(log, "browser available") {
		t.Errorf("serving upstreams logs a browser:\n%s", log)
	}
	code, out, errOut = commands.Run(t, "", "manifest", "http://"+addr, "--json")
	if code != cmdline.ExitOK || !strings.Contains(out, `"self`) {
		t.Errorf("the pasted command's manifest: exit %d\n%s%s", code, out, errOut)
	}
}

// TestShellQuote: each word comes back whole from sh, whatever it holds.
func TestShellQuote(t *testing.T) {
	t.Parallel()
	words := []string{"plain", "with space", "it's", `"double"`, "$HOME", "`id`", "a;b", "*", "~", "", "tab\there", "new\nline", "back\\slash", "x=y", "-flag"}
	line := shellJoin(append([]string{"printf", `%s\0`}, words...)...)
	out, err := exec.Command("sh", "-c", line).Output()
	if err != nil {
		t.Fatalf("sh -c %s: %v", line, err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if strings.Join(got, "|") != strings.Join(words, "|") {
		t.Errorf("sh split %s into %q, want %q", line, got, words)
	}
}

// TestAdoptServeArgsKeepWords: a command with a word holding white space
// (which --upstream would split) is written to an --upstream-config file
// beside the rules, not into DIR/*.json (the rules' sample requests).
func TestAdoptServeArgsKeepWords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := upstream.Config{Name: "files", Command: []string{"/opt/my tools/server", "--root", "/srv/data"}}
	args, err := adoptServeArgs(c, dir)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "upstreams", "files.json")
	if strings.Join(args, " ") != "--upstream-config "+file+" --rules "+dir {
		t.Errorf("args %q", args)
	}
	raw, _ := os.ReadFile(file)
	if !strings.Contains(string(raw), `"/opt/my tools/server"`) {
		t.Errorf("%s:\n%s", file, raw)
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	u := serverconf.AddUpstreamFlags(fs)
	if err := fs.Parse([]string{"--upstream-config", file}); err != nil {
		t.Fatal(err)
	}
	ups, err := u.Upstreams()
	if err != nil || len(ups) != 1 || strings.Join(ups[0].Command, "|") != "/opt/my tools/server|--root|/srv/data" {
		t.Errorf("serve reads %v %v", ups, err)
	}
}
