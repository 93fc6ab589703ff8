package macros

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/manglecp/manglecp/kernel"
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
	d := &Def{ID: "t-1", Tool: tool, Intent: protocol.Intent{Name: "i"}, Schema: map[string]any{"type": "object"},
		Created: time.Unix(100, 0).UTC(), Expires: time.Unix(200, 0).UTC(), Owner: &Owner{Name: "alice"}}
	recs, err := Encode([]*Def{d}, time.Unix(150, 0))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(recs[0].Data, "t-1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Tool, tool) {
		t.Errorf("tool changed on the way through the record:\n got %+v\nwant %+v", got.Tool, tool)
	}
	if got.Owner == nil || got.Owner.Name != "alice" || !got.Expires.Equal(d.Expires) || got.ID != "t-1" {
		t.Errorf("definition: %+v", got)
	}
	if _, err := Decode(recs[0].Data, "t-2"); !errors.Is(err, store.ErrRejected) {
		t.Errorf("a record read under another id: %v", err)
	}
}
