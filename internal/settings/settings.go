// Package settings derives a component's command-line flags, its section
// of the JSON config file, its documentation table and the names in its
// validation errors from one struct: the component's own settings type,
// whose fields carry three tags:
//
//	key:"max_pages"          the config file key (required to be a setting)
//	flag:"browser-max-pages" the command-line flag, if there is one
//	help:"pages at a time"   one line for the flag's help and the docs
//
// The struct's defaults come from the component (a value with every
// default set, for example chrome.DefaultConfig), so a new setting is a
// field with its tags, its default, and its line in the docs (which a
// test compares with [Table]).
//
// Field types: string, []string (a comma-separated flag, a JSON array),
// int, int64, bool and time.Duration (a duration flag such as 5s; in the
// config file an integer number of milliseconds under a key ending in
// "_ms").
package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Field is one setting of a settings struct.
type Field struct {
	// Name is the Go field name, as Validate's errors name it.
	Name string
	// Key is the config file key; Flag the flag name without dashes ("":
	// no flag); Help the one-line description.
	Key, Flag, Help string
	index           []int
	tags            reflect.StructTag
}

func (f Field) tag(name string) string { return f.tags.Get(name) }

// Fields lists the settings of the struct ptr points to (the fields with a
// key tag), in declaration order.
func Fields(ptr any) []Field {
	t := reflect.TypeOf(ptr).Elem()
	var out []Field
	for _, sf := range reflect.VisibleFields(t) {
		key := sf.Tag.Get("key")
		if key == "" || !sf.IsExported() {
			continue
		}
		out = append(out, Field{Name: sf.Name, Key: key, Flag: sf.Tag.Get("flag"), Help: sf.Tag.Get("help"), index: sf.Index, tags: sf.Tag})
	}
	return out
}

// Value is the field f of the struct ptr points to.
func (f Field) Value(ptr any) reflect.Value {
	return reflect.ValueOf(ptr).Elem().FieldByIndex(f.index)
}

var durationType = reflect.TypeFor[time.Duration]()

// Register adds a flag to fs for each setting of ptr that has one: its
// value is stored in ptr's field, its default is the value the field
// holds now. Use [Given] after parsing to copy only the flags given.
func Register(fs *flag.FlagSet, ptr any) {
	for _, f := range Fields(ptr) {
		if f.Flag == "" {
			continue
		}
		switch p := f.Value(ptr).Addr().Interface().(type) {
		case *string:
			fs.StringVar(p, f.Flag, *p, f.Help)
		case *[]string:
			fs.Var((*list)(p), f.Flag, f.Help)
		case *int:
			fs.IntVar(p, f.Flag, *p, f.Help)
		case *int64:
			fs.Int64Var(p, f.Flag, *p, f.Help)
		case *bool:
			fs.BoolVar(p, f.Flag, *p, f.Help)
		case *time.Duration:
			fs.DurationVar(p, f.Flag, *p, f.Help)
		default:
			panic(fmt.Sprintf("settings: %s has a type flags do not take", f.Name))
		}
	}
}

// Given copies onto dst each setting of src (both of the same struct type)
// whose flag was given on fs.
func Given(fs *flag.FlagSet, dst, src any) {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	for _, f := range Fields(src) {
		if f.Flag != "" && set[f.Flag] {
			f.Value(dst).Set(f.Value(src))
		}
	}
}

// list is a comma-separated flag of a []string setting.
type list []string

func (l *list) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

func (l *list) Set(s string) error {
	*l = nil
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			*l = append(*l, e)
		}
	}
	return nil
}

// DecodeJSON sets ptr's settings from a config file section, a JSON
// object of keys; a key that is not a setting is an error, as is a value
// of the wrong type (both name section.key). Keys it does not hold leave
// their fields as they are.
func DecodeJSON(data []byte, ptr any, section string) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("%s: %w", section, err)
	}
	byKey := map[string]Field{}
	for _, f := range Fields(ptr) {
		byKey[f.Key] = f
	}
	var errs []error
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range raw {
			if !yield(k) {
				return
			}
		}
	}) {
		f, ok := byKey[k]
		if !ok {
			errs = append(errs, &KeyError{Key: section + "." + k, Err: fmt.Errorf("json: unknown field %q", k)})
			continue
		}
		v := f.Value(ptr)
		dec := json.NewDecoder(bytes.NewReader(raw[k]))
		var err error
		if v.Type() == durationType {
			var ms int64
			if err = dec.Decode(&ms); err == nil {
				v.SetInt(int64(time.Duration(ms) * time.Millisecond))
			}
		} else { // into a new value: a default's slice is never written to
			nv := reflect.New(v.Type())
			if err = dec.Decode(nv.Interface()); err == nil {
				v.Set(nv.Elem())
			}
		}
		if err != nil {
			errs = append(errs, &KeyError{Key: section + "." + k, Err: err})
		}
	}
	return errors.Join(errs...)
}

// KeyError is a config file key that could not be read.
type KeyError struct {
	// Key is section.key.
	Key string
	Err error
}

func (e *KeyError) Error() string { return e.Key + ": " + e.Err.Error() }

func (e *KeyError) Unwrap() error { return e.Err }

// Error is a setting whose value is not valid; Validate methods return
// them (joined). Setting is the Go field name; [Rename] turns it into the
// flag or config key the value came from.
type Error struct {
	Setting string
	Problem string
}

func (e *Error) Error() string { return e.Setting + " " + e.Problem }

// Check appends an [Error] for setting to errs unless ok.
func Check(errs *[]error, ok bool, setting, format string, args ...any) {
	if !ok {
		*errs = append(*errs, &Error{Setting: setting, Problem: fmt.Sprintf(format, args...)})
	}
}

// Rename rewrites the [Error]s in err (a joined error or one) with the
// name of their setting's flag ("--browser-max-pages") when byFlag, else
// with prefix and its config key ("config.json: browser.max_pages"); ptr
// is the settings struct the errors are about. Other errors pass as they
// are.
func Rename(err error, ptr any, byFlag bool, prefix string) error {
	if err == nil {
		return nil
	}
	errs := Split(err)
	names := map[string]Field{}
	for _, f := range Fields(ptr) {
		names[f.Name] = f
	}
	out := make([]error, 0, len(errs))
	for _, e := range errs {
		var se *Error
		var f Field
		ok := errors.As(e, &se)
		index := ""
		if ok {
			var name string
			name, index, _ = strings.Cut(se.Setting, "[")
			if index != "" {
				index = "[" + index
			}
			f, ok = names[name]
		}
		switch {
		case !ok:
			out = append(out, e)
		case byFlag && f.Flag != "":
			out = append(out, fmt.Errorf("--%s%s %s", f.Flag, index, se.Problem))
		default:
			out = append(out, fmt.Errorf("%s%s%s %s", prefix, f.Key, index, se.Problem))
		}
	}
	return errors.Join(out...)
}

// FillZero sets each setting of ptr that is zero (and each number or
// duration below zero) to its value in defaults, a pointer to the same
// struct type.
func FillZero(ptr, defaults any) {
	for _, f := range Fields(ptr) {
		v := f.Value(ptr)
		if v.IsZero() || (v.CanInt() && v.Int() < 0) {
			v.Set(f.Value(defaults))
		}
	}
}

// CheckMin returns an [Error] for each number or duration setting of ptr
// below its min tag (0 when it has none).
func CheckMin(ptr any) []error {
	var errs []error
	for _, f := range Fields(ptr) {
		v := f.Value(ptr)
		if !v.CanInt() {
			continue
		}
		lowest := int64(0)
		if m := f.tag("min"); m != "" {
			fmt.Sscan(m, &lowest)
		}
		switch {
		case v.Int() >= lowest:
		case lowest == 0:
			Check(&errs, false, f.Name, "must not be negative (got %s)", Format(f, v))
		default:
			Check(&errs, false, f.Name, "must be at least %d (got %s)", lowest, Format(f, v))
		}
	}
	return errs
}

// Within rewrites the [Error]s in err as errors of the setting parent
// holds: "JWKSURL must be set" becomes "OAuth.JWKSURL must be set".
func Within(err error, parent string) error {
	var out []error
	for _, e := range Split(err) {
		if se, ok := e.(*Error); ok {
			e = &Error{Setting: parent + "." + se.Setting, Problem: se.Problem}
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// Split is the errors a joined error holds, or err alone; none for nil.
func Split(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// Format is how a value is written in docs and as a flag's default:
// durations without zero units (5m, not 5m0s), sizes of a field named
// ...Bytes in MiB when they are whole MiB, lists comma-separated.
func Format(f Field, v reflect.Value) string {
	switch {
	case v.Type() == durationType:
		s := time.Duration(v.Int()).String()
		if strings.HasSuffix(s, "m0s") {
			s = strings.TrimSuffix(s, "0s")
		}
		if strings.HasSuffix(s, "h0m") {
			s = strings.TrimSuffix(s, "0m")
		}
		return s
	case v.Kind() == reflect.Slice:
		return strings.Join(v.Interface().([]string), ",")
	case strings.HasSuffix(f.Name, "Bytes") && v.Int() > 0 && v.Int()%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", v.Int()>>20)
	}
	return fmt.Sprint(v.Interface())
}

// Table is the Markdown table documenting the settings of defaults (a
// pointer to the struct with every default set): setting, flag (when any
// has one), config file key under section, default and what it does.
func Table(defaults any, section string) string {
	fields := Fields(defaults)
	flags := slices.ContainsFunc(fields, func(f Field) bool { return f.Flag != "" })
	var b strings.Builder
	if flags {
		fmt.Fprintf(&b, "| setting | flag | config file `%s.` | default | what it does |\n|---|---|---|---|---|\n", section)
	} else {
		fmt.Fprintf(&b, "| setting | config file `%s.` | default | what it does |\n|---|---|---|---|\n", section)
	}
	for _, f := range fields {
		def := Format(f, f.Value(defaults))
		if def == "" {
			def = "(empty)"
		}
		fmt.Fprintf(&b, "| `%s` |", f.Name)
		switch {
		case !flags:
		case f.Flag != "":
			fmt.Fprintf(&b, " `--%s` |", f.Flag)
		default:
			b.WriteString(" |")
		}
		fmt.Fprintf(&b, " `%s` | %s | %s |\n", f.Key, def, f.Help)
	}
	return b.String()
}

// CheckDoc checks that the Markdown file at path holds table between the
// lines "<!-- settings: NAME -->" and "<!-- end settings: NAME -->"; with
// update it writes table there instead. Tests call it, so that the docs
// list every setting with its default.
func CheckDoc(path, name, table string, update bool) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	begin, end := "<!-- settings: "+name+" -->\n", "<!-- end settings: "+name+" -->"
	b := bytes.Index(doc, []byte(begin))
	e := bytes.Index(doc, []byte(end))
	if b < 0 || e < b {
		return fmt.Errorf("%s: no lines %q and %q around the settings table", path, strings.TrimSpace(begin), end)
	}
	b += len(begin)
	if string(doc[b:e]) == table {
		return nil
	}
	if update {
		out := append(append(append([]byte{}, doc[:b]...), table...), doc[e:]...)
		return os.WriteFile(path, out, 0o644)
	}
	return fmt.Errorf("%s: the settings table %q is not the settings' (rerun the test with its update flag); want:\n%s", path, name, table)
}
