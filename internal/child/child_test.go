//go:build unix

package child_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/manglecp/manglecp/internal/child"
	"github.com/manglecp/manglecp/internal/testenv"
)

// helperEnv makes the test binary a helper program (see TestMain).
const helperEnv = "CHILD_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "escape":
		// Start a process in a session of its own that holds our standard
		// error, say its pid, and exit.
		cmd := exec.Command("sleep", "1000")
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println(cmd.Process.Pid)
		os.Exit(0)
	case "orphan":
		// Start a child under supervision, say its pid, and die without
		// stopping it.
		p, err := child.Start(child.Config{Command: []string{"sleep", "1000"}, Env: os.Environ()})
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println(p.Pid())
		os.Exit(0)
	}
}

// helper is a Config that runs the test binary as the helper mode.
func helper(t *testing.T, mode string) child.Config {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return child.Config{Command: []string{exe}, Env: append(os.Environ(), helperEnv+"="+mode)}
}

// sh is a Config that runs script with sh, PATH kept.
func sh(script string) child.Config {
	return child.Config{Command: []string{"sh", "-c", script}, Env: []string{"PATH=" + os.Getenv("PATH")}}
}

// start starts c and stops it at the end of the test.
func start(t *testing.T, c child.Config) *child.Process {
	t.Helper()
	p, err := child.Start(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// firstLine reads one line of the child's standard output.
func firstLine(t *testing.T, p *child.Process) string {
	t.Helper()
	line, err := bufio.NewReader(p.Stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the child's output: %q %v", line, err)
	}
	return strings.TrimSpace(line)
}

// waitDone waits for p to be done, within a budget.
func waitDone(t *testing.T, p *child.Process) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(testenv.Budget(10 * time.Second)):
		t.Fatal("the child is not done")
	}
}

// gone reports whether process pid no longer runs (a zombie counts as
// gone: it waits for a parent that is not ours to reap it).
func gone(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(rest, "Z") || strings.HasPrefix(rest, "X")
}

func TestPipes(t *testing.T) {
	t.Parallel()
	p := start(t, child.Config{Command: []string{"cat"}})
	if _, err := io.WriteString(p.Stdin, "hello\n"); err != nil {
		t.Fatal(err)
	}
	if got := firstLine(t, p); got != "hello" {
		t.Fatalf("got %q", got)
	}
	p.Stdin.Close() // cat ends at the end of its input
	waitDone(t, p)
	if err := p.Err(); err != nil {
		t.Errorf("err = %v", err)
	}
}

func TestStderrLinesAndTail(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 50)
	c := sh(`printf 'one\r\ntwo\n\n` + long + `\nlast' >&2; exit 3`)
	c.MaxLine, c.TailBytes = 10, 8
	var mu sync.Mutex
	var lines []string
	c.StderrLine = func(s string) { mu.Lock(); lines = append(lines, s); mu.Unlock() }
	p := start(t, c)
	waitDone(t, p)
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"one", "two", "xxxxxxxxxx", "last"}; fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Errorf("lines %q, want %q", lines, want)
	}
	if got := p.Tail(); got != "xxx\nlast" {
		t.Errorf("tail %q", got)
	}
	var exit *exec.ExitError
	if !errors.As(p.Err(), &exit) || exit.ExitCode() != 3 {
		t.Errorf("err = %v, want exit status 3", p.Err())
	}
}

func TestEnvironmentIsOnlyWhatIsGiven(t *testing.T) {
	t.Setenv("CHILD_TEST_SECRET", "leaked")
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, "unset"},
		{[]string{"CHILD_TEST_SECRET=given"}, "given"},
	} {
		p := start(t, child.Config{Command: []string{"sh", "-c", `echo "${CHILD_TEST_SECRET-unset}"`}, Env: tc.env})
		if got := firstLine(t, p); got != tc.want {
			t.Errorf("env %q: the child saw %q, want %q", tc.env, got, tc.want)
		}
	}
}

func TestExitKillsWhatItLeft(t *testing.T) {
	t.Parallel()
	p := start(t, sh(`sleep 1000 & echo $!; exit 0`))
	pid := firstLine(t, p)
	waitDone(t, p)
	if !testenv.Poll(5*time.Second, func() bool { return gone(pid) }) {
		t.Errorf("process %s the child left still runs", pid)
	}
}

func TestStopKillsTheGroup(t *testing.T) {
	t.Parallel()
	p := start(t, sh(`sleep 1000 & echo $!; wait`))
	pid := firstLine(t, p)
	p.Stop()
	if !gone(strconv.Itoa(p.Pid())) {
		t.Error("the child runs after Stop")
	}
	if !testenv.Poll(5*time.Second, func() bool { return gone(pid) }) {
		t.Errorf("its child %s runs after Stop", pid)
	}
}

func TestStopKillsWhatIgnoresTerm(t *testing.T) {
	t.Parallel()
	c := sh(`trap '' TERM; echo ready; while :; do sleep 1; done`)
	c.Grace = 50 * time.Millisecond
	p := start(t, c)
	firstLine(t, p) // the trap is set
	p.Stop()
	var exit *exec.ExitError
	if !errors.As(p.Err(), &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("err = %v, want killed", p.Err())
	}
	p.Stop() // again: nothing happens
}

// TestStderrHeldByAnEscapee: a process that left the group (a session of
// its own) and holds standard error cannot hold Done past the grace.
func TestStderrHeldByAnEscapee(t *testing.T) {
	t.Parallel()
	c := helper(t, "escape")
	c.Grace = 50 * time.Millisecond
	p := start(t, c)
	pid := firstLine(t, p)
	n, err := strconv.Atoi(pid)
	if err != nil {
		t.Fatal(pid)
	}
	defer syscall.Kill(n, syscall.SIGKILL)
	waitDone(t, p)
	if err := p.Err(); err != nil {
		t.Errorf("err = %v", err)
	}
}

// TestParentDeath: on Linux a supervised child dies with its parent.
func TestParentDeath(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc: parent-death signal not checked here")
	}
	t.Parallel()
	cmd := exec.Command(helper(t, "orphan").Command[0])
	cmd.Env = helper(t, "orphan").Env
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(out))
	if !testenv.Poll(5*time.Second, func() bool { return gone(pid) }) {
		n, _ := strconv.Atoi(pid)
		_ = syscall.Kill(n, syscall.SIGKILL)
		t.Errorf("the child %s outlived its parent", pid)
	}
}

func TestTreeRSS(t *testing.T) {
	if _, err := os.Stat("/proc/self/statm"); err != nil {
		t.Skip("no /proc")
	}
	t.Parallel()
	p := start(t, sh(`sleep 1000 & echo $!; wait`))
	pid := firstLine(t, p)
	if d := child.Descendants(p.Pid(), 4); fmt.Sprint(d) != "["+pid+"]" {
		t.Errorf("descendants %v, want [%s]", d, pid)
	}
	if rss := p.TreeRSS(); rss <= 0 {
		t.Errorf("tree RSS %d", rss)
	}
}

func TestNoCommand(t *testing.T) {
	if _, err := child.Start(child.Config{}); err == nil {
		t.Error("no error")
	}
	if _, err := child.Start(child.Config{Command: []string{"/nonexistent/child-test"}}); err == nil {
		t.Error("no error")
	}
}

func TestReadBoundedLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want []string
	}{
		{"", 4, nil},
		{"a\nb", 4, []string{"a", "b"}},
		{"abcdefgh\nz\n", 4, []string{"abcd", "z"}},
		{"ab\r\n\r\n", 4, []string{"ab", ""}},
	} {
		br := bufio.NewReaderSize(strings.NewReader(tc.in), 16)
		var got []string
		for {
			s, err := child.ReadBoundedLine(br, tc.max)
			if err == nil || s != "" {
				got = append(got, s)
			}
			if err != nil {
				break
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%q max %d: %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}
