package testenv_test

import (
	"testing"
	"time"

	"github.com/manglecp/manglecp/internal/testenv"
)

func TestLookPathFindsAShell(t *testing.T) {
	if p := testenv.LookPath(t, "no-such-program-manglecp", "sh"); p == "" {
		t.Fatal("sh not found")
	}
}

func TestSlowdownBounds(t *testing.T) {
	s := testenv.Slowdown()
	if s < 1 || s > 10 {
		t.Fatalf("Slowdown() = %v, want within [1, 10]", s)
	}
	if b := testenv.Budget(time.Second); b < time.Second || b > 10*time.Second {
		t.Fatalf("Budget(1s) = %v", b)
	}
	t.Logf("slowdown on this machine now: %.2f", s)
}

func TestSlowdownFromEnvironment(t *testing.T) {
	for _, c := range []struct {
		env  string
		want float64
	}{{"1", 1}, {"3.5", 3.5}, {"0.2", 1}, {"50", 10}} {
		t.Setenv("MANGLECP_TEST_SLOWDOWN", c.env)
		if got := testenv.Slowdown(); got != c.want {
			t.Errorf("MANGLECP_TEST_SLOWDOWN=%s: Slowdown() = %v, want %v", c.env, got, c.want)
		}
	}
}

func TestPoll(t *testing.T) {
	t.Setenv("MANGLECP_TEST_SLOWDOWN", "1")
	n := 0
	if !testenv.Poll(5*time.Second, func() bool { n++; return n == 3 }) {
		t.Fatal("Poll gave up on a condition that held at the third look")
	}
	start := time.Now()
	if testenv.Poll(20*time.Millisecond, func() bool { return false }) {
		t.Fatal("Poll reported a condition that never held")
	}
	if time.Since(start) < 20*time.Millisecond {
		t.Fatal("Poll gave up before its budget")
	}
}

func TestFirstDiff(t *testing.T) {
	got := testenv.FirstDiff("a\nb\nc\nd", "a\nb\nX\nd")
	want := "     1   a\n     2   b\n     3 - c\n     4 - d\n     3 + X\n     4 + d\n"
	if got != want {
		t.Errorf("FirstDiff:\n%s\nwant:\n%s", got, want)
	}
	if got := testenv.FirstDiff("same", "same"); got != "(the texts are equal)" {
		t.Errorf("equal texts: %q", got)
	}
}
