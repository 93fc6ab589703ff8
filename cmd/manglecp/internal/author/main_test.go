package author

import (
	"bufio"
	"flag"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/remote"
	"github.com/manglecp/manglecp/internal/testenv"
)

// commands is the command line of the tests: the author's commands, and
// manifest, eval and invoke for what they serve.
var commands = clitest.Commands{"new": New, "adopt": Adopt, "check": Check, "manifest": remote.Manifest, "eval": remote.Eval, "invoke": remote.Invoke}

// builds holds the manglecp binary the tests that run the real command
// share (built once per test binary, started beside the tests).
var builds testenv.Builds

func TestMain(m *testing.M) {
	flag.Parse()
	builds.Start("cmd/manglecp")
	code := m.Run()
	builds.Close()
	os.Exit(code)
}

// servingLine is the log line of a server that listens, with its address.
var servingLine = regexp.MustCompile(`msg="serving MangleCP" addr=(127\.0\.0\.1:\d+)`)

// serving starts the server cmd (what names it in a failure), reads its
// stderr until it says where it listens and returns that address, the log
// so far and a function that stops it (SIGINT) and waits for it; the rest
// of stderr is drained in the background.
func serving(t *testing.T, cmd *exec.Cmd, what string) (addr, log string, stop func()) {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop = func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}
	var b strings.Builder
	for sc := bufio.NewScanner(stderr); addr == "" && sc.Scan(); {
		b.WriteString(sc.Text() + "\n")
		if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		stop()
		t.Fatalf("%s never said where it listens:\n%s", what, b.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	return addr, b.String(), stop
}
