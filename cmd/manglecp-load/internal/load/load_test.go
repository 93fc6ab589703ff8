package load

import (
	"context"
	"testing"
	"time"
)

// TestRunEveryTransport drives each transport briefly with the mixed
// traffic: every answer is what its request expects and the goroutines
// return to their baseline.
func TestRunEveryTransport(t *testing.T) {
	for _, tr := range []string{"http", "ws", "stdio"} {
		t.Run(tr, func(t *testing.T) {
			rep, err := Run(context.Background(), Config{Transport: tr, Concurrency: 3, Pipeline: 2, Duration: 300 * time.Millisecond, Mix: "mixed"})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Requests == 0 || rep.Unexpected != 0 {
				t.Fatalf("%s", rep.Format())
			}
			if rep.GoroutinesAfter > rep.GoroutinesBefore+2 {
				t.Errorf("goroutines %d -> %d", rep.GoroutinesBefore, rep.GoroutinesAfter)
			}
		})
	}
}

// TestEvaluateInvokeMix: each evaluation's macro-tool is invoked over a
// second connection, and every answer is ok.
func TestEvaluateInvokeMix(t *testing.T) {
	rep, err := Run(context.Background(), Config{Transport: "http", Concurrency: 2, Duration: 300 * time.Millisecond, Mix: "evaluate-invoke"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcomes["invoke -> ok"] == 0 || rep.Unexpected != 0 {
		t.Fatalf("%s", rep.Format())
	}
}
