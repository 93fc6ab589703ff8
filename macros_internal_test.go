package manglecp

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/manglecp/manglecp/internal/kernel"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/store"
)

// fill sets every field of v (a pointer) to a value that is not the zero
// value, recursively, so that a conversion that drops a field is seen.
func fill(t *testing.T, v reflect.Value, seed int) {
	t.Helper()
	switch v.Kind() {
	case reflect.Pointer:
		if v.Type() == reflect.TypeFor[*time.Time]() {
			at := time.Date(2026, 2, 19, 14, 30, seed%60, 0, time.UTC)
			v.Set(reflect.ValueOf(&at))
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), seed)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(t, v.Field(i), seed+i+1)
		}
	case reflect.String:
		v.SetString(v.Type().Name() + string(rune('a'+seed%26)))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(seed + 1))
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(t, s.Index(i), seed+i)
		}
		v.Set(s)
	case reflect.Interface:
		v.Set(reflect.ValueOf(json.Number("7")))
	default:
		t.Fatalf("fill: a field of kind %s: teach fill (and the record) about it", v.Kind())
	}
}

// TestRecordKeepsEveryToolField: a kernel.Tool survives the store record
// whole. A field added to the kernel's tool but not to store.Tool fails
// here, before a replica silently drops it.
func TestRecordKeepsEveryToolField(t *testing.T) {
	var tool kernel.Tool
	fill(t, reflect.ValueOf(&tool).Elem(), 0)
	d := &macroDef{id: "t-1", tool: tool, intent: protocol.Intent{Name: "i"}, schema: map[string]any{"type": "object"},
		created: time.Unix(100, 0).UTC(), expires: time.Unix(200, 0).UTC(), caller: &caller{name: "alice"}}
	recs, err := encodeMacros([]*macroDef{d}, time.Unix(150, 0))
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeMacro(recs[0].Data, "t-1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.tool, tool) {
		t.Errorf("tool changed on the way through the record:\n got %+v\nwant %+v", got.tool, tool)
	}
	if got.caller == nil || got.caller.name != "alice" || !got.expires.Equal(d.expires) || got.id != "t-1" {
		t.Errorf("definition: %+v", got)
	}
	if _, err := decodeMacro(recs[0].Data, "t-2"); !errors.Is(err, store.ErrRejected) {
		t.Errorf("a record read under another id: %v", err)
	}
}

// TestNonceSet: a nonce is accepted once until it expires, then again;
// expired nonces leave the set as later ones are used, oldest first,
// without a sweep over all of them.
func TestNonceSet(t *testing.T) {
	var s nonceSet
	t0 := time.Unix(1000, 0)
	steps := []struct {
		nonce string
		at    time.Duration
		ttl   time.Duration
		fresh bool
		size  int // after the step
	}{
		{"a", 0, time.Minute, true, 1},
		{"a", 30 * time.Second, time.Minute, false, 1},
		{"b", 40 * time.Second, 10 * time.Second, true, 2},
		{"c", 55 * time.Second, time.Minute, true, 2}, // b expired at 50 s and left
		{"b", 56 * time.Second, time.Minute, true, 3},
		{"a", time.Minute, time.Minute, true, 3}, // a expired at 60 s: used again, with a new expiry
		{"d", 150 * time.Second, time.Second, true, 1},
		{"a", 150 * time.Second, time.Second, true, 2},
		{"a", 150 * time.Second, time.Second, false, 2},
	}
	for i, st := range steps {
		if got := s.use(st.nonce, t0.Add(st.at), st.ttl); got != st.fresh {
			t.Errorf("step %d (%s at %s): fresh %v, want %v", i, st.nonce, st.at, got, st.fresh)
		}
		if n := s.size(); n != st.size {
			t.Errorf("step %d: %d nonces held, want %d", i, n, st.size)
		}
		if len(s.queue) < len(s.expiry) {
			t.Fatalf("step %d: the queue lost nonces", i)
		}
	}
}

// BenchmarkUseNonce measures one use with 100,000 live nonces held (it
// was O(n): every use swept the whole set).
func BenchmarkUseNonce(b *testing.B) {
	var s nonceSet
	now := time.Unix(1000, 0)
	for i := range 100_000 {
		s.use("live-"+strconv.Itoa(i), now, time.Hour)
	}
	b.ResetTimer()
	for i := range b.N {
		s.use("n-"+strconv.Itoa(i), now, time.Minute)
	}
}
