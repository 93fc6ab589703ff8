package settings

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// example is a settings struct of every field type settings takes.
type example struct {
	Name   string        `key:"name" flag:"x-name" help:"a name"`
	Hosts  []string      `key:"hosts" flag:"x-hosts" help:"some hosts"`
	Pages  int           `key:"pages" flag:"x-pages" help:"pages"`
	Queue  int           `key:"queue" flag:"x-queue" min:"-1" help:"waiting"`
	Bytes  int64         `key:"max_bytes" help:"a size, file only"`
	On     bool          `key:"on" flag:"x-on" help:"a switch"`
	Idle   time.Duration `key:"idle_ms" flag:"x-idle" help:"a time"`
	Hidden func()        // not a setting
}

var exampleDefaults = example{Hosts: []string{"a", "b"}, Pages: 4, Queue: 8, Bytes: 16 << 20, Idle: 5 * time.Minute}

// TestFlags: flags are registered with the struct's defaults, and only
// the flags given are copied.
func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want example
	}{
		{nil, example{}},
		{[]string{"--x-pages", "2", "--x-idle", "90s", "--x-on"}, example{Pages: 2, Idle: 90 * time.Second, On: true}},
		{[]string{"--x-hosts", " c, d ,", "--x-name", "n", "--x-queue", "-1"}, example{Hosts: []string{"c", "d"}, Name: "n", Queue: -1}},
		{[]string{"--x-pages", "4"}, example{Pages: 4}}, // given, even at the default
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		vals := exampleDefaults
		Register(fs, &vals)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		var got example
		Given(fs, &got, &vals)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %+v, want %+v", tc.args, got, tc.want)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	vals := exampleDefaults
	Register(fs, &vals)
	for name, want := range map[string]string{"x-pages": "4", "x-idle": "5m0s", "x-hosts": "a,b", "x-on": "false", "x-name": ""} {
		if got := fs.Lookup(name).DefValue; got != want {
			t.Errorf("--%s default %q, want %q", name, got, want)
		}
	}
	if fs.Lookup("max-bytes") != nil || len(Fields(&vals)) != 7 {
		t.Error("a flag for a setting without one, or a field without a key is a setting")
	}
}

// TestDecodeJSON: keys set their fields (durations in milliseconds), the
// rest stay; unknown keys and wrong types are errors naming section.key.
func TestDecodeJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want example
		errs []string
	}{
		{`{}`, exampleDefaults, nil},
		{`{"pages":2,"idle_ms":1500,"hosts":["x"],"on":true,"max_bytes":10}`,
			example{Hosts: []string{"x"}, Pages: 2, Queue: 8, Bytes: 10, On: true, Idle: 1500 * time.Millisecond}, nil},
		{`{"pagez":2,"idle_ms":"5s","pages":3}`, example{Hosts: []string{"a", "b"}, Pages: 3, Queue: 8, Bytes: 16 << 20, Idle: 5 * time.Minute},
			[]string{"sec.idle_ms: json: cannot unmarshal string", `sec.pagez: json: unknown field "pagez"`}},
		{`[1]`, exampleDefaults, []string{"sec: json: cannot unmarshal array"}},
	} {
		got := exampleDefaults
		errs := Split(DecodeJSON([]byte(tc.in), "sec", &got))
		if len(errs) != len(tc.errs) {
			t.Fatalf("%s: errors %q, want %q", tc.in, errs, tc.errs)
		}
		for i, e := range errs {
			if !strings.HasPrefix(e.Error(), tc.errs[i]) {
				t.Errorf("%s: error %q, want %q", tc.in, e, tc.errs[i])
			}
		}
		got.Hidden = nil
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// TestValidation: CheckMin, FillZero and Rename.
func TestValidation(t *testing.T) {
	bad := example{Pages: -1, Queue: -2, Idle: -time.Second, Bytes: -3}
	errs := CheckMin(&bad)
	errs = append(errs, &Error{Setting: "Hosts[1]", Problem: "is not a host"})
	for _, tc := range []struct {
		byFlag bool
		want   string
	}{
		{false, "c.json: pages must not be negative (got -1)\nc.json: queue must be at least -1 (got -2)\nc.json: max_bytes must not be negative (got -3)\nc.json: idle_ms must not be negative (got -1s)\nc.json: hosts[1] is not a host"},
		{true, "--x-pages must not be negative (got -1)\n--x-queue must be at least -1 (got -2)\nc.json: max_bytes must not be negative (got -3)\n--x-idle must not be negative (got -1s)\n--x-hosts[1] is not a host"},
	} {
		if got := Rename(errors.Join(errs...), &bad, tc.byFlag, "c.json: ").Error(); got != tc.want {
			t.Errorf("byFlag %v:\n%s\nwant\n%s", tc.byFlag, got, tc.want)
		}
	}
	if Rename(nil, &bad, true, "") != nil || len(CheckMin(&exampleDefaults)) != 0 {
		t.Error("no errors became some")
	}
	z := example{Pages: 2, Queue: -1}
	FillZero(&z, &exampleDefaults)
	if want := (example{Hosts: []string{"a", "b"}, Pages: 2, Queue: 8, Bytes: 16 << 20, Idle: 5 * time.Minute}); !reflect.DeepEqual(z, want) {
		t.Errorf("filled %+v, want %+v", z, want)
	}
}

// TestDocs: Table and CheckDoc.
func TestDocs(t *testing.T) {
	table := Table(&exampleDefaults, "sec")
	for _, want := range []string{"| `Idle` | `--x-idle` | `idle_ms` | 5m | a time |", "| `Bytes` | | `max_bytes` | 16 MiB |", "| `Name` | `--x-name` | `name` | (empty) |", "| `Hosts` | `--x-hosts` | `hosts` | a,b |"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	path := filepath.Join(t.TempDir(), "doc.md")
	_ = os.WriteFile(path, []byte("# Doc\n<!-- settings: sec -->\nold\n<!-- end settings: sec -->\nafter\n"), 0o644)
	if err := CheckDoc(path, "sec", table, false); err == nil || !strings.Contains(err.Error(), "is not the settings'") {
		t.Errorf("a stale table: %v", err)
	}
	if err := CheckDoc(path, "sec", table, true); err != nil {
		t.Fatal(err)
	}
	if err := CheckDoc(path, "sec", table, false); err != nil {
		t.Errorf("after update: %v", err)
	}
	if doc, _ := os.ReadFile(path); !strings.HasSuffix(string(doc), "<!-- end settings: sec -->\nafter\n") {
		t.Errorf("updated doc %q", doc)
	}
	if err := CheckDoc(path, "other", table, true); err == nil {
		t.Error("no markers: no error")
	}
	if got := Format(Field{Name: "T"}, reflect.ValueOf(90*time.Minute)); got != "1h30m" {
		t.Errorf("1h30m formatted %q", got)
	}
	if got := Format(Field{Name: "T"}, reflect.ValueOf(2*time.Hour)); got != "2h" {
		t.Errorf("2h formatted %q", got)
	}
}

// outer is a settings struct with nested settings: a struct, dotted keys,
// seconds, bytes, a list of objects and an optional section.
type outer struct {
	Name   string `key:"name"`
	Limits struct {
		A int64 `key:"a"`
		B int64
	} `key:"limits"`
	TTL    time.Duration `key:"cache.ttl_seconds"`
	Size   int64         `key:"cache.max_bytes"`
	Key    []byte        `key:"key"`
	People []struct {
		Name string `json:"name"`
	} `key:"people"`
	Section *example `key:"section"`
}

// TestNested: nested settings are flattened (Limits.A is limits.a), read
// from nested objects, and renamed by their dotted keys.
func TestNested(t *testing.T) {
	var o outer
	in := `{"name": "n", "limits": {"a": 3}, "cache": {"ttl_seconds": 300, "max_bytes": 10}, "key": "secret",
		"people": [{"name": "ada"}], "section": {"pages": 2, "idle_ms": 5}}`
	if err := DecodeJSON([]byte(in), "", &o); err != nil {
		t.Fatal(err)
	}
	if o.Name != "n" || o.Limits.A != 3 || o.TTL != 5*time.Minute || o.Size != 10 || string(o.Key) != "secret" ||
		len(o.People) != 1 || o.People[0].Name != "ada" || o.Section == nil || o.Section.Pages != 2 || o.Section.Idle != 5*time.Millisecond {
		t.Errorf("decoded %+v (section %+v)", o, o.Section)
	}
	var names []string
	for _, f := range Fields(&o) {
		names = append(names, f.Name+"="+f.Key)
	}
	if got := strings.Join(names, " "); got != "Name=name Limits.A=limits.a TTL=cache.ttl_seconds Size=cache.max_bytes Key=key People=people Section=section" {
		t.Errorf("fields %s", got)
	}
	err := DecodeJSON([]byte(`{"limits": {"b": 1}, "cache": 5, "people": [{"nam": "x"}], "section": {"pagez": 1}}`), "", &o)
	for _, want := range []string{`limits.b: json: unknown field "b"`, "cache: json: cannot unmarshal number", `people: json: unknown field "nam"`, `section.pagez: json: unknown field "pagez"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("errors %v, want %q", err, want)
		}
	}
	renamed := Rename(errors.Join(&Error{Setting: "Limits.A", Problem: "is bad"}, &Error{Setting: "Section.Pages", Problem: "is bad"}), &o, false, "f: ")
	if renamed.Error() != "f: limits.a is bad\nf: section.pages is bad" {
		t.Errorf("renamed %q", renamed)
	}
	var c outer
	Copy(&c, &o)
	if c.Name != "n" || c.Limits.A != 3 || c.Section != o.Section {
		t.Errorf("copied %+v", c)
	}
}
