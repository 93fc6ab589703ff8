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
	"maps"
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
// key tag), in declaration order. A struct-typed setting whose own fields
// have key tags stands for them: Limits `key:"limits"` holding MaxFacts
// `key:"max_facts"` is the setting Limits.MaxFacts, key limits.max_facts.
func Fields(ptr any) []Field {
	return fieldsOf(reflect.TypeOf(ptr).Elem(), "", "", nil)
}

func fieldsOf(t reflect.Type, name, key string, index []int) []Field {
	var out []Field
	for _, sf := range reflect.VisibleFields(t) {
		k := sf.Tag.Get("key")
		if k == "" || !sf.IsExported() {
			continue
		}
		idx := append(append([]int{}, index...), sf.Index...)
		if sf.Type.Kind() == reflect.Struct && sf.Type != durationType {
			if sub := fieldsOf(sf.Type, name+sf.Name+".", key+k+".", idx); len(sub) > 0 {
				out = append(out, sub...)
				continue
			}
		}
		out = append(out, Field{Name: name + sf.Name, Key: key + k, Flag: sf.Tag.Get("flag"), Help: sf.Tag.Get("help"), index: idx, tags: sf.Tag})
	}
	return out
}

// sectionType is the struct type a pointer-to-struct setting (an optional
// section such as OAuth *oauth.Config) points to, when it has settings.
func sectionType(t reflect.Type) (reflect.Type, bool) {
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	return t.Elem(), len(fieldsOf(t.Elem(), "", "", nil)) > 0
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

// Copy sets each setting of dst to its value in src, a pointer to the
// same struct type.
func Copy(dst, src any) {
	for _, f := range Fields(src) {
		f.Value(dst).Set(f.Value(src))
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

// DecodeJSON sets settings from a config file section (section "" for the
// whole file), a JSON object of keys: each key goes to the first of ptrs
// (pointers to settings structs) that has it (a dotted key a.b is the key
// b of the object a). A key none has is an error, as is a value of the
// wrong type (both name section.key). Keys the object does not hold leave
// their fields as they are. Durations are milliseconds under keys ending
// in _ms, seconds under keys ending in _seconds; a []byte is a string; a
// pointer to a settings struct is an object of its keys.
func DecodeJSON(data []byte, section string, ptrs ...any) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		if section == "" {
			return err
		}
		return fmt.Errorf("%s: %w", section, err)
	}
	type target struct {
		ptr    any
		fields []Field
	}
	var targets []target
	for _, p := range ptrs {
		targets = append(targets, target{p, Fields(p)})
	}
	var errs []error
	var decode func(raw map[string]json.RawMessage, prefix string)
	decode = func(raw map[string]json.RawMessage, prefix string) {
		for _, k := range slices.Sorted(maps.Keys(raw)) {
			name := prefix + k
			full := name
			if section != "" {
				full = section + "." + name
			}
			var leaf *Field
			var ptr any
			nested := false
			for _, t := range targets {
				for i, f := range t.fields {
					if f.Key == name && leaf == nil {
						leaf, ptr = &t.fields[i], t.ptr
					} else if strings.HasPrefix(f.Key, name+".") {
						nested = true
					}
				}
			}
			switch {
			case leaf != nil:
				v := leaf.Value(ptr)
				if st, ok := sectionType(v.Type()); ok {
					nv := reflect.New(st)
					if err := DecodeJSON(raw[k], full, nv.Interface()); err != nil {
						errs = append(errs, Split(err)...)
					} else {
						v.Set(nv)
					}
					continue
				}
				if err := decodeValue(raw[k], v, name); err != nil {
					errs = append(errs, &KeyError{Key: full, Err: err})
				}
			case nested:
				var sub map[string]json.RawMessage
				if err := json.Unmarshal(raw[k], &sub); err != nil {
					errs = append(errs, &KeyError{Key: full, Err: err})
					continue
				}
				decode(sub, name+".")
			default:
				errs = append(errs, &KeyError{Key: full, Err: fmt.Errorf("json: unknown field %q", k)})
			}
		}
	}
	decode(raw, "")
	return errors.Join(errs...)
}

// decodeValue decodes one setting's value into v.
func decodeValue(data []byte, v reflect.Value, key string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	switch {
	case v.Type() == durationType:
		var n int64
		if err := dec.Decode(&n); err != nil {
			return err
		}
		unit := time.Millisecond
		if strings.HasSuffix(key, "_seconds") {
			unit = time.Second
		}
		v.SetInt(n * int64(unit))
	case v.Type() == reflect.TypeFor[[]byte]():
		var s string
		if err := dec.Decode(&s); err != nil {
			return err
		}
		v.SetBytes([]byte(s))
	default: // into a new value: a default's slice is never written to
		nv := reflect.New(v.Type())
		if err := dec.Decode(nv.Interface()); err != nil {
			return err
		}
		v.Set(nv.Elem())
	}
	return nil
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
		// The settings of an optional section (OAuth *oauth.Config): OAuth.JWKSURL.
		if st, ok := sectionType(f.Value(ptr).Type()); ok {
			for _, sub := range fieldsOf(st, f.Name+".", f.Key+".", nil) {
				names[sub.Name] = sub
			}
		}
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
		if !v.CanInt() && !v.CanFloat() {
			continue
		}
		lowest := int64(0)
		if m := f.tag("min"); m != "" {
			fmt.Sscan(m, &lowest)
		}
		var below bool
		if v.CanInt() {
			below = v.Int() < lowest
		} else {
			below = v.Float() < float64(lowest)
		}
		switch {
		case !below:
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
	case v.Type() == reflect.TypeFor[[]byte]():
		return string(v.Bytes())
	case v.Type() == reflect.TypeFor[[]string]():
		return strings.Join(v.Interface().([]string), ",")
	case v.Kind() == reflect.Pointer && v.IsNil(), v.Kind() == reflect.Slice && v.Len() == 0:
		return ""
	case strings.HasSuffix(f.Name, "Bytes") && v.CanInt() && v.Int() > 0 && v.Int()%(1<<20) == 0:
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
	keyCol := "config file key"
	if section != "" {
		keyCol = "config file `" + section + ".`"
	}
	if flags {
		fmt.Fprintf(&b, "| setting | flag | %s | default | what it does |\n|---|---|---|---|---|\n", keyCol)
	} else {
		fmt.Fprintf(&b, "| setting | %s | default | what it does |\n|---|---|---|---|\n", keyCol)
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
