package manglecp_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/manglecp/manglecp"
)

// TestMemoryStoreRateLimitSurvivesKeyFlood (issue 30): the memory store's
// request buckets were cleared wholesale beyond 100,000 keys, so a flood
// of new keys reset every caller's limit. Buckets now go one by one (the
// least recently used first when full): a caller that keeps sending stays
// limited through 200,000 other keys.
func TestMemoryStoreRateLimitSurvivesKeyFlood(t *testing.T) {
	st := manglecp.NewMemoryStore(0)
	ctx := context.Background()
	limit := manglecp.RateLimit{PerSecond: 1, Burst: 5}
	take := func(key string) bool {
		wait, err := st.Take(ctx, key, limit, fixedNow)
		if err != nil {
			t.Fatal(err)
		}
		return wait == 0
	}
	for range 5 {
		take("peer:203.0.113.9")
	}
	for i := range 200_000 {
		take(fmt.Sprintf("peer:10.%d.%d.%d", i>>16, i>>8&255, i&255))
		if i%1000 == 0 && take("peer:203.0.113.9") {
			t.Fatalf("after %d other keys the limited caller was allowed", i)
		}
	}
	if take("peer:203.0.113.9") {
		t.Fatal("after 200,000 other keys the limited caller was allowed")
	}
}
