package redis_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/store"
	redisstore "github.com/manglecp/manglecp/store/redis"
)

// sealHeader is the frame byte and the tag in front of a stored record.
const sealHeader = 1 + 32

// TestReplicasRefuseRecordsTheyCannotAuthenticate is issue 26 item 10:
// someone who can write Redis edits a stored macro-tool (drops its
// confirmation, makes an observe-only identity its owner), plants one (a
// read-only tool pointed at the write action), copies a valid record to
// another key, or writes a record in a version this replica does not
// know. Every replica answers macro_not_found, logs the refusal with the
// request id, and runs nothing: no report is written.
func TestReplicasRefuseRecordsTheyCannotAuthenticate(t *testing.T) {
	r := startRedis(t)
	clk := &clock{t: start}
	reports := t.TempDir()
	evaluator := replicasWith(t, r, 1, clk, reports, nil)[0]
	tools := macros(t, evaluator, aliceToken)
	report, chain := tools["write_diagnosis_report"], tools["diagnose_causal_chain"]
	if !report.Safety.RequiresUserConfirmation || chain.Safety.RequiresUserConfirmation {
		t.Fatalf("safety: report %+v chain %+v", report.Safety, chain.Safety)
	}
	ctx := context.Background()
	rc := goredis.NewClient(&goredis.Options{Addr: strings.TrimSuffix(strings.TrimPrefix(r.url(), "redis://"), "/0")})
	defer rc.Close()
	stored := func(id string) []byte {
		t.Helper()
		v, err := rc.Get(ctx, "manglecp:m:"+id).Bytes()
		if err != nil {
			t.Fatalf("stored %s: %v", id, err)
		}
		return v
	}
	// editRecord changes the record's JSON and keeps the seal in front of
	// it: an attacker without the key can do no better.
	editRecord := func(sealed []byte, edit func(rec map[string]any)) []byte {
		t.Helper()
		var rec map[string]any
		if err := json.Unmarshal(sealed[sealHeader:], &rec); err != nil {
			t.Fatalf("the stored value is not seal+record: %v", err)
		}
		edit(rec)
		raw, _ := json.Marshal(rec)
		return append(append([]byte(nil), sealed[:sealHeader]...), raw...)
	}
	tool := func(rec map[string]any) map[string]any { return rec["tool"].(map[string]any) }

	for _, tc := range []struct {
		name  string
		token string
		id    string        // the macro_id invoked
		value func() []byte // what is put under manglecp:m:<id>
	}{
		{"confirmation dropped", aliceToken, report.MacroID, func() []byte {
			return editRecord(stored(report.MacroID), func(rec map[string]any) { tool(rec)["requires_confirmation"] = false })
		}},
		{"owner changed to an observe-only identity, confirmation dropped", olgaToken, report.MacroID, func() []byte {
			return editRecord(stored(report.MacroID), func(rec map[string]any) {
				rec["owner"] = "olga"
				tool(rec)["requires_confirmation"] = false
			})
		}},
		{"planted: a read-only tool pointing at the write action", olgaToken, "planted-0123456789abcdef", func() []byte {
			return editRecord(stored(chain.MacroID), func(rec map[string]any) {
				rec["id"], rec["owner"] = "planted-0123456789abcdef", "olga"
				tool(rec)["action"] = "write_report"
			})
		}},
		{"a valid record copied to another key", aliceToken, "copied-0123456789abcdef", func() []byte {
			return stored(report.MacroID)
		}},
		{"a valid record copied to another key, its id changed to match", aliceToken, "copied-fedcba9876543210", func() []byte {
			return editRecord(stored(chain.MacroID), func(rec map[string]any) { rec["id"] = "copied-fedcba9876543210" })
		}},
		{"sealed with another deployment's key", aliceToken, "otherkey-0123456789abcd", func() []byte {
			sealed := stored(chain.MacroID)
			var rec map[string]any
			_ = json.Unmarshal(sealed[sealHeader:], &rec)
			rec["id"] = "otherkey-0123456789abcd"
			raw, _ := json.Marshal(rec)
			return store.Seal([]byte("another deployment's store key"), "manglecp:m:otherkey-0123456789abcd", raw)
		}},
		{"no seal: a record as replicas stored it before", aliceToken, "legacy-0123456789abcdef", func() []byte {
			sealed := stored(chain.MacroID)
			var rec map[string]any
			_ = json.Unmarshal(sealed[sealHeader:], &rec)
			rec["id"] = "legacy-0123456789abcdef"
			delete(rec, "v")
			raw, _ := json.Marshal(rec)
			return raw
		}},
		{"a record version this replica does not know, correctly sealed", aliceToken, "future-0123456789abcdef", func() []byte {
			sealed := stored(chain.MacroID)
			var rec map[string]any
			_ = json.Unmarshal(sealed[sealHeader:], &rec)
			rec["id"], rec["v"] = "future-0123456789abcdef", store.RecordVersion+1
			raw, _ := json.Marshal(rec)
			return store.Seal(storeKey, "manglecp:m:future-0123456789abcdef", raw)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := rc.Set(ctx, "manglecp:m:"+tc.id, tc.value(), time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
			logs := &testenv.Buffer{}
			// A fresh replica: nothing decoded in its cache yet, it reads Redis.
			replica := replicasWith(t, r, 1, clk, reports, logs)[0]
			env := send(t, replica, tc.token, protocol.TypeInvokeRequest,
				map[string]any{"macro_id": tc.id, "args": map[string]any{"request_id": "r42"}})
			if code(env) != string(protocol.CodeMacroNotFound) {
				t.Errorf("invoke: %s, want macro_not_found", env.Payload)
			}
			if l := logs.String(); !strings.Contains(l, "stored macro-tool rejected") || !strings.Contains(l, "request_id=x") {
				t.Errorf("the refusal is not logged with the request id:\n%s", l)
			}
			if strings.Contains(string(env.Payload), "seal") || strings.Contains(string(env.Payload), "version") {
				t.Errorf("the client learns why: %s", env.Payload)
			}
		})
	}
	if files, _ := os.ReadDir(reports); len(files) != 0 {
		t.Errorf("a report was written: %v", files)
	}
	// The untouched record of the read-only tool still works everywhere.
	fresh := replicasWith(t, r, 1, clk, reports, nil)[0]
	if env := send(t, fresh, aliceToken, protocol.TypeInvokeRequest,
		map[string]any{"macro_id": chain.MacroID, "args": map[string]any{"request_id": "r42"}}); env.Type != protocol.TypeInvokeResponse {
		t.Errorf("the intact record: %s", env.Payload)
	}
}

// TestStoreNeedsAKey: a Redis store without a shared key of at least
// store.MinKeyBytes is refused at start-up, and a store with another key
// refuses what this one wrote.
func TestStoreNeedsAKey(t *testing.T) {
	r := startRedis(t)
	ctx := context.Background()
	for _, k := range [][]byte{nil, []byte("short key")} {
		if st, err := redisstore.New(ctx, redisstore.Options{URL: r.url(), Key: k}); err == nil || !strings.Contains(err.Error(), "at least 16 bytes") {
			if st != nil {
				st.Close()
			}
			t.Errorf("key %q: %v", k, err)
		}
	}
	a, err := redisstore.New(ctx, redisstore.Options{URL: r.url(), Key: storeKey})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := redisstore.New(ctx, redisstore.Options{URL: r.url(), Key: []byte("a different store key")})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.PutMacros(ctx, []store.Macro{{ID: "m1", Data: []byte(`{"v":1}`), TTL: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	if v, err := a.GetMacro(ctx, "m1"); err != nil || string(v) != `{"v":1}` {
		t.Errorf("same key: %q %v", v, err)
	}
	if v, err := b.GetMacro(ctx, "m1"); v != nil || !errors.Is(err, store.ErrRejected) {
		t.Errorf("another key: %q %v, want store.ErrRejected", v, err)
	}
}

// TestRateLimitOnRedisClock: replicas whose clocks differ by an hour share
// one bucket correctly, because the bucket runs on Redis's clock. On the
// replicas' clocks, the replica an hour ahead would lock the others out
// for an hour.
func TestRateLimitOnRedisClock(t *testing.T) {
	r := startRedis(t)
	ctx := context.Background()
	var stores []*redisstore.Store
	for range 2 {
		st, err := redisstore.New(ctx, redisstore.Options{URL: r.url(), Key: storeKey})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		stores = append(stores, st)
	}
	lim := store.RateLimit{PerSecond: 1, Burst: 2}
	now := time.Now()
	ahead, behind := now.Add(time.Hour), now.Add(-time.Hour)
	var waits []time.Duration
	for _, c := range []struct {
		st  *redisstore.Store
		now time.Time
	}{{stores[0], ahead}, {stores[1], behind}, {stores[1], now}} {
		w, err := c.st.Take(ctx, "identity:alice", lim, c.now)
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, w)
	}
	if waits[0] != 0 || waits[1] != 0 || waits[2] <= 0 || waits[2] > time.Second {
		t.Errorf("waits %v, want 0, 0, then up to 1s whatever the replicas' clocks", waits)
	}
}
