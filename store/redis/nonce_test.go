package redis_test

import (
	"context"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
	redisstore "github.com/manglecp/manglecp/store/redis"
)

// TestWeakStoreKeyRefused: a store key of sixteen "a"s (or another that is
// too easy to guess) is refused before Redis is used; before, it was
// accepted as long as it had 16 bytes.
func TestWeakStoreKeyRefused(t *testing.T) {
	r := startRedis(t)
	for _, k := range []string{"aaaaaaaaaaaaaaaa", "abcdefghijklmnopqrst", "abababababababababab"} {
		if st, err := redisstore.New(context.Background(), redisstore.Options{URL: r.url(), Key: []byte(k)}); err == nil || !strings.Contains(err.Error(), "not fit") {
			if st != nil {
				st.Close()
			}
			t.Errorf("key %q: %v, want a refusal", k, err)
		}
	}
}

// TestDeletedNonceDetected: someone with write access to Redis deletes the
// used-nonce records; the replica that accepted a confirmation token
// still refuses it (already used) and logs the replay at ERROR. Before,
// the token ran again. (The trust placed in Redis is in docs/deploy.md.)
func TestDeletedNonceDetected(t *testing.T) {
	r := startRedis(t)
	clk := &clock{t: start}
	logs := &testenv.Buffer{}
	a := replicasWith(t, r, 1, clk, t.TempDir(), logs)[0]
	report := macros(t, a, aliceToken)["write_diagnosis_report"]
	confirmed := map[string]any{"macro_id": report.MacroID, "args": map[string]any{"request_id": "r42"},
		"confirmation_token": a.ConfirmationToken(report.MacroID)}
	if env := send(t, a, aliceToken, protocol.TypeInvokeRequest, confirmed); env.Type != protocol.TypeInvokeResponse {
		t.Fatalf("confirmed invoke: %s", env.Payload)
	}
	c := goredis.NewClient(&goredis.Options{Addr: strings.TrimPrefix(strings.TrimSuffix(r.url(), "/0"), "redis://")})
	defer c.Close()
	keys, err := c.Keys(context.Background(), "manglecp:n:*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("nonce records %v, %v; want 1", keys, err)
	}
	if err := c.Del(context.Background(), keys...).Err(); err != nil {
		t.Fatal(err)
	}
	env := send(t, a, aliceToken, protocol.TypeInvokeRequest, confirmed)
	if code(env) != string(protocol.CodeConfirmationInvalid) || !strings.Contains(message(env), "already used") {
		t.Fatalf("the token replayed after its nonce was deleted from Redis: %s", env.Payload)
	}
	if l := logs.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "confirmation token replayed") {
		t.Errorf("the replay is not logged at ERROR:\n%s", l)
	}
}
