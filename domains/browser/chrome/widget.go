package chrome

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// Widgets: every kind of form control an agent meets, set by value and
// read back.
//
// setField finds out what kind of control an element is (kindJS), sets
// it the way that kind takes a value (typing into text, the value of a
// native date, time, colour or range input as a whole, options of a
// select or list box, the checked state of a box, the keys of an ARIA
// slider, the option a combobox offers after typing), and reads the value
// back from the page. A value the page does not hold afterwards is a
// [NotHeld] error that says what it holds: never a silent wrong value.

// kindJS says how the element it is called on takes a value.
const kindJS = `function() {
  const el = this, tag = el.tagName, role = (el.getAttribute('role') || '').trim().split(/\s+/)[0];
  if (el.disabled || el.getAttribute('aria-disabled') === 'true') return 'disabled';
  if ((tag === 'INPUT' || tag === 'TEXTAREA') && el.readOnly && !['checkbox', 'radio', 'file'].includes(el.type)) return 'readonly';
  if (el.getAttribute('aria-readonly') === 'true') return 'readonly';
  if (tag === 'SELECT') return el.multiple ? 'multi' : 'select';
  if (tag === 'INPUT') {
    const t = el.type;
    if (t === 'checkbox' || t === 'radio') return 'check';
    if (t === 'file') return 'file';
    if (['date', 'time', 'datetime-local', 'month', 'week', 'color', 'range'].includes(t)) return 'value';
    if (['button', 'submit', 'reset', 'image', 'hidden'].includes(t)) return 'other';
    if (role === 'combobox' || (el.getAttribute('aria-autocomplete') || 'none') !== 'none') return 'combobox';
    return t === 'number' ? 'number' : 'text';
  }
  if (tag === 'TEXTAREA') return 'text';
  if (['checkbox', 'radio', 'switch', 'menuitemcheckbox', 'menuitemradio'].includes(role) || el.hasAttribute('aria-checked')) return 'check';
  if (role === 'slider' || role === 'spinbutton') return 'slider';
  if (role === 'combobox') return 'combobox';
  if (role === 'listbox') return 'listbox';
  if (role === 'radiogroup' || ((tag === 'FIELDSET' || role === 'group') && el.querySelector('input[type=radio],[role=radio]'))) return 'radiogroup';
  if (el.isContentEditable || role === 'textbox' || role === 'searchbox') return 'editable';
  return 'other';
}`

// readJS reads the value of the element it is called on, for its kind:
// a string, or a list of strings (the selected options).
const readJS = `function(kind) {
  const el = this, norm = s => (s || '').replace(/\s+/g, ' ').trim();
  const opts = root => [...root.querySelectorAll('[role=option]')];
  switch (kind) {
  case 'select': return el.selectedIndex < 0 ? '' : el.options[el.selectedIndex].label;
  case 'multi': return [...el.selectedOptions].map(o => o.label);
  case 'check':
    if (el.tagName === 'INPUT') return el.checked ? 'true' : 'false';
    return el.getAttribute('aria-checked') === 'true' ? 'true' : 'false';
  case 'slider': return el.getAttribute('aria-valuetext') || el.getAttribute('aria-valuenow') || '';
  case 'listbox': return opts(el).filter(o => o.getAttribute('aria-selected') === 'true').map(o => norm(o.textContent));
  case 'radiogroup': return [...el.querySelectorAll('[role=radio],input[type=radio]')].filter(o => o.tagName === 'INPUT' ? o.checked : o.getAttribute('aria-checked') === 'true').map(o => norm(o.getAttribute('aria-label') || (o.labels && o.labels.length ? o.labels[0].textContent : o.textContent))).join(', ');
  case 'editable': return norm(el.innerText);
  case 'combobox':
    if ('value' in el && el.tagName !== 'BUTTON') return el.value;
    { const i = el.querySelector('input'); if (i) return i.value; }
    return norm(el.textContent);
  }
  return 'value' in el ? String(el.value) : norm(el.textContent);
}`

// valueJS sets the value of a native input that takes it whole (date,
// time, datetime-local, month, week, colour, range) as the browser's own
// picker does: through the value setter (which a framework's own setter
// on the element does not hide), then input and change events. It
// returns the input's type and limits for messages.
const valueJS = `function(want) {
  const el = this, set = Object.getOwnPropertyDescriptor(el.ownerDocument.defaultView.HTMLInputElement.prototype, 'value').set;
  el.focus();
  set.call(el, want);
  el.dispatchEvent(new Event('input', {bubbles: true}));
  el.dispatchEvent(new Event('change', {bubbles: true}));
  return {type: el.type, min: el.min, max: el.max, step: el.step};
}`

// clearJS focuses the element and clears its value (or, when it is
// editable content, selects its text so that typing replaces it).
const clearJS = `function() {
  const el = this;
  el.focus();
  if ('value' in el && el.tagName !== 'BUTTON') {
    const proto = el.tagName === 'TEXTAREA' ? 'HTMLTextAreaElement' : 'HTMLInputElement';
    const d = Object.getOwnPropertyDescriptor(el.ownerDocument.defaultView[proto].prototype, 'value');
    if (d && d.set) d.set.call(el, ''); else el.value = '';
    el.dispatchEvent(new Event('input', {bubbles: true}));
    return 'value';
  }
  const doc = el.ownerDocument, sel = doc.getSelection(), r = doc.createRange();
  r.selectNodeContents(el);
  sel.removeAllRanges();
  sel.addRange(r);
  return 'editable';
}`

// selectJS chooses the options of the select it is called on whose label
// or value is one of want (exactly, else ignoring case and spaces), as a
// user would (input and change events); with a multiple select the
// others are cleared. It returns the wants no option matched.
const selectJS = `function(want) {
  const el = this, norm = s => s.replace(/\s+/g, ' ').trim().toLowerCase();
  const find = w => [...el.options].find(o => o.label === w || o.value === w) || [...el.options].find(o => norm(o.label) === norm(w));
  const chosen = [], missing = [];
  for (const w of want) { const o = find(w); if (o) chosen.push(o); else missing.push(w); }
  if (missing.length) return missing;
  el.focus();
  if (el.multiple) for (const o of el.options) o.selected = chosen.includes(o);
  else chosen[0].selected = true;
  el.dispatchEvent(new Event('input', {bubbles: true}));
  el.dispatchEvent(new Event('change', {bubbles: true}));
  return [];
}`

// optionsJS lists the options the element it is called on offers: for a
// list box or radio group its own, for a combobox those of the list box
// it controls (aria-controls, aria-owns) or else every visible option of
// its document, at most 50.
const optionsJS = `function() {
  const el = this, doc = el.ownerDocument, norm = s => (s || '').replace(/\s+/g, ' ').trim();
  const visible = o => o.getClientRects().length > 0 && !o.closest('[hidden],[aria-hidden=true]');
  let roots = [el];
  const role = (el.getAttribute('role') || '').trim();
  if (role !== 'listbox' && role !== 'radiogroup' && el.tagName !== 'FIELDSET' && role !== 'group') {
    const ids = [el, ...el.querySelectorAll('[aria-controls],[aria-owns]')].flatMap(e => ((e.getAttribute('aria-controls') || '') + ' ' + (e.getAttribute('aria-owns') || '')).split(/\s+/)).filter(Boolean);
    const root = el.getRootNode();
    roots = ids.map(id => (root.getElementById ? root.getElementById(id) : null) || doc.getElementById(id)).filter(Boolean);
    if (!roots.length) roots = [root];
  }
  const group = role === 'radiogroup' || el.tagName === 'FIELDSET' || role === 'group';
  const sel = group ? '[role=radio],input[type=radio]' : '[role=option]';
  const out = [];
  for (const r of roots) for (const o of r.querySelectorAll(sel)) if (visible(o) && out.length < 50) out.push(norm(o.getAttribute('aria-label') || (o.labels && o.labels.length ? o.labels[0].textContent : o.textContent)));
  return out;
}`

// pickJS returns the option of the element it is called on (see
// optionsJS) whose text is want: exactly, else ignoring case, else the
// only one that starts with it, else the only one that contains it.
const pickOptionJS = `function(want) {
  const el = this, doc = el.ownerDocument, norm = s => (s || '').replace(/\s+/g, ' ').trim();
  const visible = o => o.getClientRects().length > 0 && !o.closest('[hidden],[aria-hidden=true]');
  let roots = [el];
  const role = (el.getAttribute('role') || '').trim();
  const group = role === 'radiogroup' || el.tagName === 'FIELDSET' || role === 'group';
  if (role !== 'listbox' && !group) {
    const ids = [el, ...el.querySelectorAll('[aria-controls],[aria-owns]')].flatMap(e => ((e.getAttribute('aria-controls') || '') + ' ' + (e.getAttribute('aria-owns') || '')).split(/\s+/)).filter(Boolean);
    const root = el.getRootNode();
    roots = ids.map(id => (root.getElementById ? root.getElementById(id) : null) || doc.getElementById(id)).filter(Boolean);
    if (!roots.length) roots = [root];
  }
  const sel = group ? '[role=radio],input[type=radio]' : '[role=option]';
  const all = [];
  for (const r of roots) for (const o of r.querySelectorAll(sel)) if (visible(o)) all.push(o);
  const text = o => norm(o.getAttribute('aria-label') || (o.labels && o.labels.length ? o.labels[0].textContent : o.textContent)), w = norm(want), lw = w.toLowerCase();
  const one = list => list.length === 1 ? list[0] : null;
  return all.find(o => text(o) === w) || all.find(o => text(o).toLowerCase() === lw) ||
    one(all.filter(o => text(o).toLowerCase().startsWith(lw))) || one(all.filter(o => text(o).toLowerCase().includes(lw))) || null;
}`

// typingTargetJS returns the element of a combobox one types into: the
// element itself when it takes text, else its input or editable part.
const typingTargetJS = `function() {
  if (('value' in this && this.tagName === 'INPUT') || this.isContentEditable) return this;
  return this.querySelector('input:not([type=hidden]),textarea,[contenteditable=""],[contenteditable=true]');
}`

// sliderJS reads an ARIA slider's or spinbutton's value and limits.
const sliderJS = `function() {
  const n = a => { const v = parseFloat(this.getAttribute(a)); return isNaN(v) ? null : v; };
  return {now: n('aria-valuenow'), min: n('aria-valuemin'), max: n('aria-valuemax'), text: this.getAttribute('aria-valuetext') || ''};
}`

// formats are the value formats of native inputs, for messages.
var formats = map[string]string{
	"date": "a date is YYYY-MM-DD", "time": "a time is HH:MM (24 h)", "datetime-local": "a date and time is YYYY-MM-DDTHH:MM",
	"month": "a month is YYYY-MM", "week": "a week is YYYY-Www", "color": "a colour is #rrggbb",
}

// setField sets the element to want (several values for a multiple
// select or list box, one value else) as its kind takes it, and reads
// the value back. op is the kind of action asked for: "fill" (any
// kind), "select" (an element with options) or "check" (a box).
func setField(el *elem, op string, want []string, col *collector) error {
	kind, err := callOn[string](el, kindJS)
	if err != nil {
		return err
	}
	one := strings.Join(want, ", ")
	switch {
	case op == "check" && kind != "check":
		return cannotCheck(el.id, one, "it is not a checkbox, radio button or switch")
	case op == "select" && kind != "select" && kind != "multi" && kind != "listbox" && kind != "combobox" && kind != "radiogroup":
		return noSuchOption(el.id, one, nil)
	case len(want) > 1 && kind != "multi" && kind != "listbox":
		return takesNoValue(el.id, fmt.Sprintf("it takes one value, not %d", len(want)))
	case len(want) == 0:
		want = []string{""}
	}
	switch kind {
	case "check":
		return check(el, one)
	case "select", "multi":
		missing, err := callOn[[]string](el, selectJS, want)
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			offered, _ := callOn[[]string](el, `function() { return [...this.options].slice(0, 30).map(o => o.label); }`)
			return noSuchOption(el.id, missing[0], offered)
		}
		return readBack(el, kind, want, "")
	case "value":
		lim, err := callOn[struct{ Type, Min, Max, Step string }](el, valueJS, want[0])
		if err != nil {
			return err
		}
		hint := formats[lim.Type]
		if lim.Type == "range" {
			hint = fmt.Sprintf("a number from %s to %s in steps of %s", or(lim.Min, "0"), or(lim.Max, "100"), or(lim.Step, "1"))
		}
		return readBack(el, lim.Type, want, hint)
	case "text", "number", "editable":
		if err := typeInto(el, want[0]); err != nil {
			return err
		}
		return readBack(el, kind, want, "")
	case "slider":
		return slide(el, want[0])
	case "combobox":
		return chooseInCombobox(el, want[0], col)
	case "listbox", "radiogroup":
		return chooseOptions(el, kind, want)
	case "file":
		return takesNoValue(el.id, "it is a file input: choose its files with upload_file")
	case "readonly", "disabled":
		holds, err := readValue(el, "")
		if err != nil {
			return err
		}
		what := "read-only"
		if kind == "disabled" {
			what = "disabled"
		}
		return takesNoValue(el.id, fmt.Sprintf("it is %s and holds %q (the page sets it some other way: its buttons, another field)", what, clip(strings.Join(holds, ", "), 100)))
	}
	return takesNoValue(el.id, "it is not a field (click it, or type into it with act_on_element)")
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// readBack reads the element's value (as kind) and compares it with
// want: a [NotHeld] error when they differ.
func readBack(el *elem, kind string, want []string, hint string) error {
	readKind := kind
	switch kind {
	case "date", "time", "datetime-local", "month", "week", "color", "range", "number", "text":
		readKind = "text"
	}
	holds, err := readValue(el, readKind)
	if err != nil {
		return err
	}
	if same(kind, holds, want) {
		return nil
	}
	return notHeld(el.id, strings.Join(want, ", "), strings.Join(holds, ", "), hint)
}

// readValue reads the element's value as readJS does, as a list.
func readValue(el *elem, kind string) ([]string, error) {
	res, err := callRaw(el, readJS, true, kind)
	if err != nil {
		return nil, err
	}
	var one string
	if res != nil && len(res.Value) > 0 && json.Unmarshal(res.Value, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if res != nil && len(res.Value) > 0 {
		_ = json.Unmarshal(res.Value, &many)
	}
	return many, nil
}

// same reports whether a field of kind holding holds holds want: the
// same text (a page may reformat text: "4111111111111111" shown as
// "4111 1111 1111 1111" is the same value), the same number for numbers,
// the same options in any order.
func same(kind string, holds, want []string) bool {
	if len(holds) != len(want) {
		return len(want) == 1 && want[0] == "" && len(holds) == 0
	}
	switch kind {
	case "range", "number":
		a, err1 := strconv.ParseFloat(strings.TrimSpace(holds[0]), 64)
		b, err2 := strconv.ParseFloat(strings.TrimSpace(want[0]), 64)
		if err1 == nil && err2 == nil {
			return math.Abs(a-b) < 1e-9
		}
	case "color":
		return strings.EqualFold(holds[0], want[0])
	case "multi", "listbox":
		left := map[string]int{}
		for _, h := range holds {
			left[loose(h)]++
		}
		for _, w := range want {
			if left[loose(w)] == 0 {
				return false
			}
			left[loose(w)]--
		}
		return true
	}
	if holds[0] == want[0] {
		return true
	}
	return loose(holds[0]) == loose(want[0]) && loose(want[0]) != ""
}

// loose is s lower-cased without spaces and the punctuation pages add to
// format a value (dashes, dots, slashes, parentheses).
func loose(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\n', '-', '.', '/', '(', ')', '\u00a0':
			return -1
		}
		return r
	}, strings.ToLower(s))
}

// typeInto focuses and clears the element and types text into it, as a
// user would (the page sees the text inserted at once, with its input
// events).
func typeInto(el *elem, text string) error {
	if _, err := callOn[string](el, clearJS); err != nil {
		return err
	}
	if text == "" {
		return nil
	}
	_, err := chromedp.Call(el.tab, input.InsertText, input.InsertTextParams{Text: text})
	return err
}

// check sets the checkbox, radio button or switch to want ("true" or
// "false"), clicking it only when its state differs, and checks that it
// took the state.
func check(el *elem, want string) error {
	if want != "true" && want != "false" {
		return cannotCheck(el.id, want, `the value of a check is "true" or "false"`)
	}
	state, err := readValue(el, "check")
	if err != nil {
		return err
	}
	if len(state) == 1 && state[0] == want {
		return nil
	}
	if err := click(el); err != nil {
		return err
	}
	state, err = readValue(el, "check")
	if err != nil {
		return err
	}
	if len(state) != 1 || state[0] != want {
		return cannotCheck(el.id, want, "clicking it did not change its state")
	}
	return nil
}

// maxSlides bounds the key presses that move an ARIA slider.
const maxSlides = 200

// slide moves an ARIA slider or spinbutton (not a native input) to want,
// with the arrow keys a user presses (Home and End first when want is a
// limit), reading its value after each press; want is a number, or the
// text the slider shows (aria-valuetext).
func slide(el *elem, want string) error {
	type state struct {
		Now, Min, Max *float64
		Text          string
	}
	read := func() (state, error) { return callOn[state](el, sliderJS) }
	if _, err := callOn[string](el, `function() { this.focus(); return ''; }`); err != nil {
		return err
	}
	target, numeric := strconv.ParseFloat(strings.TrimSpace(want), 64)
	st, err := read()
	if err != nil {
		return err
	}
	holds := func(st state) string {
		if st.Text != "" {
			return st.Text
		}
		if st.Now != nil {
			return strconv.FormatFloat(*st.Now, 'f', -1, 64)
		}
		return ""
	}
	done := func(st state) bool {
		if numeric == nil && st.Now != nil && math.Abs(*st.Now-target) < 1e-9 {
			return true
		}
		return strings.EqualFold(strings.TrimSpace(st.Text), strings.TrimSpace(want)) && st.Text != ""
	}
	hint := ""
	if st.Min != nil && st.Max != nil {
		hint = fmt.Sprintf("from %g to %g", *st.Min, *st.Max)
	}
	if numeric == nil && st.Min != nil && target <= *st.Min {
		_ = pressKey(el.tab, "Home")
		st, _ = read()
	} else if numeric == nil && st.Max != nil && target >= *st.Max {
		_ = pressKey(el.tab, "End")
		st, _ = read()
	}
	prevDir := 0
	for i := 0; i < maxSlides && !done(st); i++ {
		key, dir := "ArrowRight", 1
		if numeric == nil {
			if st.Now == nil {
				break
			}
			if *st.Now > target {
				key, dir = "ArrowLeft", -1
			}
		} else if i > 0 {
			break // a text value: one pass through the values, rightwards
		}
		if prevDir != 0 && dir != prevDir {
			break // it stepped over the value: the steps do not reach it
		}
		prevDir = dir
		if err := pressKey(el.tab, key); err != nil {
			return err
		}
		next, err := read()
		if err != nil {
			return err
		}
		if next.Now != nil && st.Now != nil && *next.Now == *st.Now && next.Text == st.Text {
			break // at a limit, or it does not move with the keys
		}
		st = next
	}
	if done(st) {
		return nil
	}
	return notHeld(el.id, want, holds(st), hint)
}

// comboWait bounds the wait for a combobox's options to appear after
// typing; the wait ends as soon as a matching option is shown and the
// page's network is quiet.
const comboWait = 5 * time.Second

// chooseInCombobox types want into a combobox (an ARIA combobox or
// autocomplete field) and picks the option the page then offers whose
// text is want (see pickOptionJS): options that a script fetches after
// the typing are waited for, as long as the page's network is busy or
// until comboWait. Without any option the typed text is its value (a
// free-text combobox); with options and none matching it is an
// [NoSuchOption] error listing them.
func chooseInCombobox(el *elem, want string, col *collector) error {
	field, err := objOn(el, typingTargetJS)
	if err != nil {
		return err
	}
	if field != nil {
		if err := click(field); err != nil {
			return err
		}
		if err := typeInto(field, want); err != nil {
			return err
		}
	} else if err := click(el); err != nil { // a select-only combobox opens on a click
		return err
	}
	col.touch()
	deadline := time.Now().Add(comboWait)
	var opt *elem
	for {
		if opt, err = objOn(el, pickOptionJS, want); err != nil {
			return err
		}
		if opt != nil || time.Now().After(deadline) {
			break
		}
		// Options come after the page's requests and scripts: wait for
		// its network to be quiet, then for a turn of its event loop;
		// quiet then and still no option: none is coming.
		quietBefore := col.settled()
		waitQuiet(el.op, col, deadline)
		if _, err := callOn[bool](el, `function() { return new Promise(r => setTimeout(() => r(true), 0)); }`); err != nil {
			return err
		}
		if quietBefore && col.settled() {
			if opt, err = objOn(el, pickOptionJS, want); err != nil {
				return err
			}
			break
		}
	}
	if opt == nil {
		offered, _ := callOn[[]string](el, optionsJS)
		if len(offered) > 0 || field == nil {
			return noSuchOption(el.id, want, offered)
		}
		return readBack(field, "text", []string{want}, "")
	}
	text, _ := callOn[string](opt, `function() { return (this.getAttribute('aria-label') || this.textContent || '').replace(/\s+/g, ' ').trim(); }`)
	if err := click(opt); err != nil {
		return err
	}
	col.touch()
	// The combobox shows the option chosen: its field's value, its text,
	// or the option marked selected.
	holds, err := readValue(el, "combobox")
	if err != nil {
		return err
	}
	h := ""
	if len(holds) > 0 {
		h = holds[0]
	}
	if loose(h) == loose(text) || loose(h) == loose(want) || (loose(h) != "" && strings.Contains(loose(h), loose(want))) {
		return nil
	}
	if sel, _ := callOn[string](opt, `function() { return this.isConnected ? (this.getAttribute('aria-selected') || '') : ''; }`); sel == "true" {
		return nil
	}
	return notHeld(el.id, want, h, "")
}

// chooseOptions clicks the options (of an ARIA list box, or the radio
// buttons of a radio group) whose texts are want, holding Control for
// the second and later ones of a multiple list box, and reads the
// selection back.
func chooseOptions(el *elem, kind string, want []string) error {
	for i, w := range want {
		opt, err := objOn(el, pickOptionJS, w)
		if err != nil {
			return err
		}
		if opt == nil {
			offered, _ := callOn[[]string](el, optionsJS)
			return noSuchOption(el.id, w, offered)
		}
		selected, _ := callOn[string](opt, `function() { return this.getAttribute('aria-selected') || this.getAttribute('aria-checked') || ''; }`)
		if selected == "true" && len(want) > 1 {
			continue
		}
		p, err := centre(opt)
		if err != nil {
			return err
		}
		var mod int64
		if i > 0 {
			mod = 2 // Control: add to the selection
		}
		if err := clickAt(el.tab, p, mod); err != nil {
			return err
		}
	}
	if kind == "radiogroup" {
		return readBack(el, "radiogroup", want[:1], "")
	}
	holds, err := readValue(el, "listbox")
	if err != nil {
		return err
	}
	if same("listbox", holds, want) {
		return nil
	}
	// The popup list of a combobox: the combobox shows the option chosen.
	if len(want) == 1 {
		shown, err := callOn[*string](el, controllerValueJS)
		if err != nil {
			return err
		}
		if shown != nil && (loose(*shown) == loose(want[0]) || strings.Contains(loose(*shown), loose(want[0]))) {
			return nil
		}
	}
	// A list box that keeps one selection per click: the last one asked
	// for is selected.
	if len(want) > 1 {
		return notHeld(el.id, strings.Join(want, ", "), strings.Join(holds, ", "), "the list box keeps one option")
	}
	return notHeld(el.id, want[0], strings.Join(holds, ", "), "")
}

// controllerValueJS returns the value of the combobox that controls the
// list box it is called on (aria-controls, aria-owns), or null.
const controllerValueJS = `function() {
  if (!this.id) return null;
  const q = '[aria-controls~="' + CSS.escape(this.id) + '"],[aria-owns~="' + CSS.escape(this.id) + '"]';
  const c = this.getRootNode().querySelector(q) || this.ownerDocument.querySelector(q);
  if (!c) return null;
  return ('value' in c && c.tagName !== 'BUTTON') ? c.value : (c.textContent || '').replace(/\s+/g, ' ').trim();
}`

// waitQuiet waits until the page's network and events are quiet (see
// collector.settled) or until deadline.
func waitQuiet(op context.Context, col *collector, deadline time.Time) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !col.settled() && time.Now().Before(deadline) {
		select {
		case <-op.Done():
			return
		case <-tick.C:
		}
	}
}

// pressKey presses and releases key (a name of keys) on the focused
// element, as a user would.
func pressKey(tab context.Context, key string) error {
	k, ok := keys[key]
	if !ok {
		return unknownKey(key)
	}
	name := key
	if key == "Space" {
		name = " "
	}
	down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Key: name, Code: k.code,
		WindowsVirtualKeyCode: k.vk, NativeVirtualKeyCode: k.vk, Text: k.text}
	if k.text == "" {
		down.Type = input.DispatchKeyEventTypeRawKeyDown
	}
	if _, err := chromedp.Call(tab, input.DispatchKeyEvent, down); err != nil {
		return err
	}
	up := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyUp, Key: name, Code: k.code,
		WindowsVirtualKeyCode: k.vk, NativeVirtualKeyCode: k.vk}
	_, err := chromedp.Call(tab, input.DispatchKeyEvent, up)
	return err
}
