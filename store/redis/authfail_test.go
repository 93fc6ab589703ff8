package redis_test

import (
	"testing"
	"time"

	"github.com/manglecp/manglecp/protocol"
)

// TestFailedLoginBudgetAcrossReplicas: with a shared Redis, the budget of
// failed logins (10 at once per client, then 1/s) is the deployment's: 30
// wrong tokens sent round-robin to three replicas get about 10 auth_invalid
// answers (plus one per second the test took, the budget's refill) and
// rate_limited for the rest, on every replica. Before, each replica kept
// its own budget: all 30 were answered auth_invalid, three budgets for one
// attacker.
func TestFailedLoginBudgetAcrossReplicas(t *testing.T) {
	r := startRedis(t)
	clk := &clock{t: start}
	reps := replicas(t, r, 3, clk)
	began := time.Now()
	invalid, limited := 0, map[int]bool{}
	for i := range 30 {
		env := send(t, reps[i%3], "wrong-token-0123456789", protocol.TypeIntentRequest, diagnose())
		switch code(env) {
		case string(protocol.CodeAuthInvalid):
			invalid++
		case string(protocol.CodeRateLimited):
			limited[i%3] = true
		default:
			t.Fatalf("a wrong token: %s", env.Payload)
		}
	}
	refill := int(time.Since(began)/time.Second) + 1
	if invalid > 10+refill || len(limited) != 3 {
		t.Fatalf("%d of 30 wrong tokens answered auth_invalid, rate_limited on %d of 3 replicas; want at most %d and all 3 (one budget for the deployment)", invalid, len(limited), 10+refill)
	}
	// A correct token still passes on every replica.
	for _, rep := range reps {
		if env := send(t, rep, aliceToken, protocol.TypeIntentRequest, diagnose()); env.Type != protocol.TypeIntentResponse {
			t.Errorf("alice after the failures: %s", env.Payload)
		}
	}
}
