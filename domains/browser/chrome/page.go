package chrome

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// DefaultMaxPageElements bounds the elements one [Page] keeps.
const DefaultMaxPageElements = 300

// PageElement is one element of a page's accessibility tree, as the
// browser domain turns it into facts.
type PageElement struct {
	// ID is "ax" and the element's backend DOM node id: stable while the
	// element stays in the page (across reads and actions of a session).
	ID string
	// Ref is the element's readable reference, which session actions
	// take (see [Session.Act]): its accessible name with
	// whitespace collapsed and clipped to 60 bytes, or its role when the
	// name is empty; when the same ref came earlier in document order in
	// the same read, " #2", " #3", ... is added ("Delete #2").
	Ref string
	// Role is the accessibility role (heading, link, button, textbox,
	// combobox, option, checkbox, table, row, cell, columnheader,
	// rowheader, alert, status, dialog, ...); Name its accessible name
	// (a field's label, a cell's text), Value a field's value.
	Role, Name, Value string
	// Parent is the ID of the nearest kept ancestor ("" at the top).
	Parent string
	// Level is a heading's level.
	Level int
	// States of form fields and options.
	Required, Invalid, Checked, Selected, Disabled bool
	// Table cells: the table's ID, the cell's row and column (from 1),
	// and the names of its row and column headers.
	Table                string
	Row, Col             int
	RowHeader, ColHeader string
}

// Page is the accessibility tree of a session's current page, bounded:
// Elements holds the first kept elements in document order, Total counts
// them all (Truncated when Elements is shorter).
type Page struct {
	URL, Title string
	Elements   []PageElement
	Total      int
	Truncated  bool
	// refs maps the ref of every element walked (kept or not) to its
	// node.
	refs map[string]pageNode
}

// pageNode is where an element of a [Page] is: its backend DOM node id,
// and the target of the cross-site frame that holds it ("" for the
// page's own target, which also holds its same-site frames).
type pageNode struct {
	id    cdp.BackendNodeID
	frame string
}

// maxRef bounds the bytes of a ref taken from a name.
const maxRef = 60

// refBase is the ref of an element before its repeat suffix: name with
// whitespace collapsed, clipped to maxRef bytes, or role when name is
// empty.
func refBase(name, role string) string {
	r := strings.Join(strings.Fields(name), " ")
	if len(r) > maxRef {
		cut := maxRef
		for cut > 0 && !utf8Start(r[cut]) {
			cut--
		}
		r = strings.TrimRight(r[:cut], " ")
	}
	if r == "" {
		r = role
	}
	return r
}

// pageRoles are the roles a Page keeps; other nodes (generic containers,
// static text, ignored nodes) are walked through.
var pageRoles = map[string]bool{
	"heading": true, "link": true, "button": true, "textbox": true, "searchbox": true,
	"combobox": true, "listbox": true, "option": true, "MenuListOption": true, "checkbox": true,
	"radio": true, "spinbutton": true, "slider": true, "switch": true, "menuitem": true, "tab": true,
	"table": true, "grid": true, "row": true, "cell": true, "gridcell": true,
	"columnheader": true, "rowheader": true, "alert": true, "status": true,
	"dialog": true, "alertdialog": true, "form": true, "main": true, "navigation": true,
	"region": true, "banner": true, "contentinfo": true, "search": true,
	"tree": true, "treeitem": true, "menu": true, "menubar": true, "menuitemcheckbox": true,
	"menuitemradio": true, "tablist": true, "radiogroup": true, "log": true, "timer": true,
	// A group (a fieldset) names the radio buttons in it: one field.
	"group": true,
	// Native inputs whose parts the tree lists (a date's day, month
	// and year spinbuttons, its picker button): kept as one field each
	// (nativeRoles), their parts not walked.
	"Date": true, "InputTime": true, "DateTime": true, "ColorWell": true,
	"date": true, "time": true, "datetime-local": true, "month": true, "week": true, "color": true,
	"file": true,
}

// nativeRoles are the tree's roles of native inputs that are one field
// with one value (set as a whole: "2026-11-30"), though the tree lists
// their parts; their role in a Page is the input's type (date, time,
// datetime-local, month, week, color), read from the DOM.
var nativeRoles = map[string]bool{"Date": true, "InputTime": true, "DateTime": true, "ColorWell": true}

// Read reads the accessibility tree of the current page of
// the session (CDP Accessibility.getFullAXTree, which needs no
// DOM domain) and keeps at most max elements (0:
// [DefaultMaxPageElements]). The Observation holds the console messages
// and requests of the call. Errors: those of [Session.Act].
func (s *Session) Read(ctx context.Context, max int) (*Page, *Observation, error) {
	b := s.b
	if max <= 0 {
		max = DefaultMaxPageElements
	}
	var p *Page
	obs, err := s.do(ctx, func(op context.Context, lt *liveTab, obs *Observation) error {
		var err error
		p, err = b.readPageOf(op, lt, max)
		if err == nil {
			obs.URL, obs.Title = p.URL, p.Title
			obs.Page = p
			lt.refs = p.refs
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return p, obs, nil
}

// axFullMax is the number of DOM elements above which a page's
// accessibility tree is not read (Accessibility.getFullAXTree: on a page
// of 35,000 elements, 75,000 nodes, 10 s and 157 MB of replies in this
// process; on one of 175,000 elements no answer within 120 s; and any
// accessibility call makes the renderer build the tree of the whole
// document, which took a page of 100,000 elements over the renderer's
// 512 MiB). Such a page is read by script instead, for its first
// elements only (pickJS).
const axFullMax = 5000

// readPageOf reads the page of lt (see readFrameTrees), with its
// cross-site frames.
func (b *Browser) readPageOf(tab context.Context, lt *liveTab, max int) (*Page, error) {
	return readFrameTrees(tab, lt, max)
}

// readAXPage reads the page of tab (see readFrameTrees), without its
// cross-site frames.
func readAXPage(tab context.Context, max int) (*Page, error) {
	return readFrameTrees(tab, nil, max)
}

// readFrameTrees reads the page's accessibility tree, with the trees of its
// frames (same-site ones from the page's target, cross-site ones from
// their own targets, which lt keeps; none without lt), and keeps at most
// max elements. Above axFullMax DOM elements it reads only the first
// candidates of the top document, by script (pickNodes); Total is then a
// lower bound.
func readFrameTrees(tab context.Context, lt *liveTab, max int) (*Page, error) {
	type where struct {
		URL   string `json:"url"`
		Title string `json:"title"`
		Count int    `json:"count"`
	}
	w, err := chromedp.Run(tab, chromedp.Evaluate[where](`({url: location.href, title: String(document.title).slice(0, 1000), count: document.getElementsByTagName('*').length})`))
	if err != nil {
		return nil, err
	}
	p := &Page{URL: clip(w.URL, maxURL), Title: clip(w.Title, 200)}
	if w.Count > axFullMax {
		nodes, seen, complete, err := pickNodes(tab, max)
		if err != nil {
			return nil, fmt.Errorf("reading the page's elements: %w", err)
		}
		buildPage(p, &axForest{nodes: nodes}, max)
		if !complete {
			// Total is then the candidates seen (a lower bound).
			p.Total = maxInt(p.Total, seen)
			p.Truncated = true
		}
		return p, nil
	}
	tree, err := chromedp.Call(tab, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		return nil, fmt.Errorf("reading the accessibility tree: %w", err)
	}
	f := &axForest{nodes: tree.Nodes}
	readFrames(tab, lt, f)
	readNatives(tab, lt, f)
	buildPage(p, f, max)
	return p, nil
}

// axForest is the accessibility tree of a page with the trees of its
// frames grafted under their frame elements. Node ids of frames are
// prefixed ("f1:") so that they do not collide; frameOf maps them to
// their frame (from 1; frames[0] is the page's own).
type axForest struct {
	nodes   []*accessibility.Node
	frameOf map[accessibility.NodeID]int
	frames  []axFrame
	// opaque are nodes whose parts are not walked (native date, time
	// and colour inputs).
	opaque map[accessibility.NodeID]bool
}

// axFrame is a frame of a page: its label (the frame element's name,
// else "frame N") and the target that holds it ("" for the page's).
type axFrame struct {
	label, target string
}

// maxFrames bounds the frames of a page that are read.
const maxFrames = 8

// readFrames grafts the trees of the page's frames (and their frames,
// at most maxFrames in all) into f. A frame whose tree cannot be read
// (not loaded, refused by the allow-list) is left out.
func readFrames(tab context.Context, lt *liveTab, f *axForest) {
	f.frames = []axFrame{{}}
	f.frameOf = map[accessibility.NodeID]int{}
	var depth int64
	for i := 0; i < len(f.nodes) && len(f.frames) <= maxFrames; i++ {
		n := f.nodes[i]
		if n.Ignored || axText(n.Role) != "Iframe" || n.BackendDOMNodeID == 0 {
			continue
		}
		parent := f.frameOf[n.NodeID]
		ctx := tab
		if t := f.frames[parent].target; t != "" && lt != nil {
			if ft := lt.frames[t]; ft != nil {
				ctx = ft.ctx
			}
		}
		d, err := chromedp.Call(ctx, dom.DescribeNode, dom.DescribeNodeParams{BackendNodeID: n.BackendDOMNodeID, Depth: &depth})
		if err != nil || d.Node == nil || d.Node.FrameID == "" {
			continue
		}
		target := f.frames[parent].target
		tree, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{FrameID: d.Node.FrameID})
		if err != nil || len(tree.Nodes) == 0 {
			// A cross-site frame runs in its own process: its tree is
			// read from its own target.
			if lt == nil {
				continue
			}
			ft := lt.attachFrame(tab, string(d.Node.FrameID), pageNode{id: n.BackendDOMNodeID, frame: target})
			if ft == nil {
				continue
			}
			tree, err = chromedp.Call(ft.ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
			if err != nil || len(tree.Nodes) == 0 {
				continue
			}
			target = string(d.Node.FrameID)
		}
		k := len(f.frames)
		label := refBase(axText(n.Name), "")
		if label == "" {
			label = fmt.Sprintf("frame %d", k)
		}
		f.frames = append(f.frames, axFrame{label: clip(label, 30), target: target})
		prefix := fmt.Sprintf("f%d:", k)
		for _, c := range tree.Nodes {
			c.NodeID = accessibility.NodeID(prefix + string(c.NodeID))
			for j := range c.ChildIDs {
				c.ChildIDs[j] = accessibility.NodeID(prefix + string(c.ChildIDs[j]))
			}
			f.frameOf[c.NodeID] = k
		}
		n.ChildIDs = append(n.ChildIDs, tree.Nodes[0].NodeID)
		f.nodes = append(f.nodes, tree.Nodes...)
	}
}

// nativeInputJS reads a native input's type and value.
const nativeInputJS = `function() { return this.tagName === 'INPUT' ? {type: this.type, value: this.value} : null; }`

// maxNatives bounds the native inputs whose type is read from the DOM.
const maxNatives = 60

// readNatives gives the native inputs the tree lists by their parts
// (nativeRoles) and file inputs (buttons with a value) their input type
// as role and their DOM value, and marks the former opaque.
func readNatives(tab context.Context, lt *liveTab, f *axForest) {
	f.opaque = map[accessibility.NodeID]bool{}
	str := func(s string) *accessibility.Value {
		v, _ := json.Marshal(s)
		return &accessibility.Value{Value: v}
	}
	read := 0
	for _, n := range f.nodes {
		role := axText(n.Role)
		native := nativeRoles[role]
		if n.Ignored || n.BackendDOMNodeID == 0 || !(native || (role == "button" && axText(n.Value) != "")) {
			continue
		}
		if native {
			f.opaque[n.NodeID] = true
		}
		if read++; read > maxNatives {
			continue
		}
		node := pageNode{id: n.BackendDOMNodeID}
		if k := f.frameOf[n.NodeID]; k > 0 {
			node.frame = f.frames[k].target
		}
		el, err := resolveNode(tab, lt, node, "")
		if err != nil || el == nil {
			continue
		}
		type in struct{ Type, Value string }
		v, err := callOn[*in](el, nativeInputJS)
		if err != nil || v == nil {
			continue
		}
		switch {
		case v.Type == "file":
			n.Role = str("file")
		case native:
			n.Role, n.Value = str(v.Type), str(v.Value)
		}
	}
	releaseObjects(tab)
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// pickJS picks the first %d visible elements of the page (in document
// order, walking at most 50,000) of the roles a Page keeps, and computes
// what the accessibility tree would say of each (role, name, value,
// states; roughly: explicit roles, implicit roles of the usual tags,
// names from aria-label, aria-labelledby, labels, alt, title, text,
// placeholder), with the index of each one's nearest picked ancestor
// (-1: none); seen counts the candidates walked, complete says whether
// the walk reached the end of the page and picked every candidate.
const pickJS = `(() => {
  const max = %d, walkMax = 50000;
  const sel = 'h1,h2,h3,h4,h5,h6,a[href],button,input:not([type=hidden]),select,option,textarea,table,tr,td,th,form,main,nav,header,footer,dialog,[role],[contenteditable=""],[contenteditable=true]';
  const text = (el, n) => (el.textContent || '').replace(/\s+/g, ' ').trim().slice(0, n);
  const roleOf = el => {
    const r = (el.getAttribute('role') || '').trim().split(/\s+/)[0];
    if (r) return r;
    const tag = el.tagName.toLowerCase(), type = (el.getAttribute('type') || 'text').toLowerCase();
    if (/^h[1-6]$/.test(tag)) return 'heading';
    switch (tag) {
    case 'a': return 'link';
    case 'button': return 'button';
    case 'select': return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
    case 'option': return 'option';
    case 'textarea': return 'textbox';
    case 'table': return 'table';
    case 'tr': return 'row';
    case 'td': return 'cell';
    case 'th': return el.getAttribute('scope') === 'row' ? 'rowheader' : 'columnheader';
    case 'form': return 'form';
    case 'main': return 'main';
    case 'nav': return 'navigation';
    case 'header': return 'banner';
    case 'footer': return 'contentinfo';
    case 'dialog': return 'dialog';
    case 'input':
      if (['button', 'submit', 'reset', 'image'].includes(type)) return 'button';
      if (type === 'checkbox' || type === 'radio') return type;
      if (type === 'range') return 'slider';
      if (type === 'number') return 'spinbutton';
      if (type === 'search') return 'searchbox';
      return 'textbox';
    }
    return el.isContentEditable ? 'textbox' : '';
  };
  const nameOf = (el, role) => {
    let t = el.getAttribute('aria-label') || '';
    if (!t && el.hasAttribute('aria-labelledby'))
      t = el.getAttribute('aria-labelledby').split(/\s+/).map(id => { const l = document.getElementById(id); return l ? text(l, 200) : ''; }).join(' ');
    if (!t && el.labels && el.labels.length) t = text(el.labels[0], 200);
    if (!t && el.tagName === 'INPUT' && ['button', 'submit', 'reset'].includes(el.type)) t = el.value;
    if (!t && /^(button|link|heading|cell|gridcell|columnheader|rowheader|option|tab|menuitem|checkbox|radio|switch)$/.test(role) && !(el.tagName === 'INPUT')) t = text(el, 200);
    if (!t) t = el.getAttribute('alt') || el.getAttribute('title') || el.getAttribute('placeholder') || '';
    return t.replace(/\s+/g, ' ').trim().slice(0, 200);
  };
  const els = [], items = [], idx = new Map();
  let seen = 0, walked = 0;
  const root = document.body || document.documentElement;
  const w = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT);
  for (let el = w.currentNode; el && walked++ < walkMax; el = w.nextNode()) {
    if (!el.matches(sel)) continue;
    if (el.hidden || el.getAttribute('aria-hidden') === 'true') continue;
    seen++;
    if (els.length >= max) continue;
    if (el.tagName !== 'OPTION' && !el.getClientRects().length) continue;
    let parent = -1;
    for (let a = el.parentElement; a; a = a.parentElement) if (idx.has(a)) { parent = idx.get(a); break; }
    const role = roleOf(el), aria = n => el.getAttribute('aria-' + n);
    const it = {role, name: nameOf(el, role), parent, props: {}};
    if (/^(alert|status|dialog|alertdialog)$/.test(role) && !it.name) it.name = text(el, 200);
    if ('value' in el && el.tagName !== 'BUTTON' && el.tagName !== 'OPTION' && !['checkbox', 'radio', 'button', 'submit', 'reset'].includes(el.type)) it.value = String(el.tagName === 'SELECT' ? (el.selectedOptions[0] || {}).label || '' : el.value).slice(0, 200);
    const lv = /^H([1-6])$/.exec(el.tagName);
    if (lv || aria('level')) it.props.level = String(aria('level') || lv[1]);
    if (el.required || aria('required') === 'true') it.props.required = 'true';
    if (aria('invalid') && aria('invalid') !== 'false') it.props.invalid = 'true';
    if (el.disabled || aria('disabled') === 'true') it.props.disabled = 'true';
    if ((el.tagName === 'INPUT' && el.checked) || aria('checked') === 'true') it.props.checked = 'true';
    if ((el.tagName === 'OPTION' && el.selected) || aria('selected') === 'true') it.props.selected = 'true';
    idx.set(el, els.length);
    els.push(el);
    items.push(it);
  }
  return {els, meta: {items, seen, complete: !w.nextNode() && seen <= max}};
})()`

// pickNodes runs pickJS and turns what it found into accessibility nodes
// (linked into a tree, each under its nearest picked ancestor) that
// buildPage walks as it walks a full tree. The backend node id of each
// element comes from DOM.describeNode, which needs no DOM domain and,
// unlike any accessibility call, does not make the renderer build the
// accessibility tree of the whole document.
func pickNodes(tab context.Context, max int) (nodes []*accessibility.Node, seen int, complete bool, err error) {
	const group = "manglecp-pick"
	defer func() {
		if tab.Err() == nil {
			_, _ = chromedp.Call(tab, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: group})
		}
	}()
	no, yes := false, true
	unlisted := errors.New("the page did not list its elements")
	res, err := chromedp.Call(tab, runtime.Evaluate, runtime.EvaluateParams{Expression: fmt.Sprintf(pickJS, max),
		ObjectGroup: group, ReturnByValue: &no, Silent: &yes})
	if err != nil {
		return nil, 0, false, err
	}
	if res.ExceptionDetails != nil || res.Result == nil || res.Result.ObjectID == "" {
		return nil, 0, false, unlisted
	}
	type item struct {
		Role   string            `json:"role"`
		Name   string            `json:"name"`
		Value  *string           `json:"value"`
		Parent int               `json:"parent"`
		Props  map[string]string `json:"props"`
	}
	var m struct {
		Items    []item `json:"items"`
		Seen     int    `json:"seen"`
		Complete bool   `json:"complete"`
	}
	mres, err := chromedp.Call(tab, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: `function() { return this.meta }`, ObjectID: res.Result.ObjectID, ReturnByValue: &yes, Silent: &yes})
	if err != nil {
		return nil, 0, false, err
	}
	if mres.Result == nil || json.Unmarshal(mres.Result.Value, &m) != nil {
		return nil, 0, false, unlisted
	}
	eres, err := chromedp.Call(tab, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: `function() { return this.els }`, ObjectID: res.Result.ObjectID, ReturnByValue: &no, Silent: &yes})
	if err != nil {
		return nil, 0, false, err
	}
	if eres.Result == nil || eres.Result.ObjectID == "" {
		return nil, 0, false, unlisted
	}
	props, err := chromedp.Call(tab, runtime.GetProperties, runtime.GetPropertiesParams{ObjectID: eres.Result.ObjectID, OwnProperties: &yes})
	if err != nil {
		return nil, 0, false, err
	}
	objs := make([]runtime.RemoteObjectID, len(m.Items))
	for _, pd := range props.Result {
		var i int
		if _, err := fmt.Sscan(pd.Name, &i); err != nil || i < 0 || i >= len(objs) || pd.Value == nil {
			continue
		}
		objs[i] = pd.Value.ObjectID
	}
	str := func(s string) *accessibility.Value {
		v, _ := json.Marshal(s)
		return &accessibility.Value{Value: v}
	}
	root := &accessibility.Node{NodeID: "pick-root", Ignored: true}
	nodes = append(nodes, root)
	picked := make([]*accessibility.Node, len(objs))
	var depth int64
	for i, obj := range objs {
		if obj == "" {
			continue
		}
		d, err := chromedp.Call(tab, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: obj, Depth: &depth})
		if err != nil || d.Node == nil {
			if tab.Err() != nil {
				return nil, 0, false, tab.Err()
			}
			continue
		}
		it := m.Items[i]
		n := &accessibility.Node{NodeID: accessibility.NodeID(fmt.Sprintf("pick-%d", i)), Role: str(it.Role),
			Name: str(it.Name), BackendDOMNodeID: d.Node.BackendNodeID}
		if it.Value != nil {
			n.Value = str(*it.Value)
		}
		for k, v := range it.Props {
			n.Properties = append(n.Properties, &accessibility.Property{Name: accessibility.PropertyName(k), Value: str(v)})
		}
		picked[i] = n
		nodes = append(nodes, n)
	}
	for i, n := range picked {
		if n == nil {
			continue
		}
		parent, pi := root, m.Items[i].Parent
		for pi >= 0 && pi < i && picked[pi] == nil {
			pi = m.Items[pi].Parent
		}
		if pi >= 0 && pi < i {
			parent = picked[pi]
		}
		parent.ChildIDs = append(parent.ChildIDs, n.NodeID)
	}
	return nodes, m.Seen, m.Complete, nil
}

// axText is the string of an accessibility value ("" when absent).
func axText(v *accessibility.Value) string {
	if v == nil || len(v.Value) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(v.Value, &s) == nil {
		return s
	}
	return strings.Trim(string(v.Value), `"`)
}

// buildPage walks the forest from the root in document order and fills
// p.
func buildPage(p *Page, forest *axForest, max int) {
	nodes := forest.nodes
	if len(nodes) == 0 {
		return
	}
	byID := make(map[accessibility.NodeID]*accessibility.Node, len(nodes))
	for _, n := range nodes {
		byID[n.NodeID] = n
	}
	// Tables: the column headers of each table by column, filled as
	// its rows are walked.
	type tableState struct {
		id       string
		row      int
		colHeads map[int]string
	}
	type frame struct {
		id     accessibility.NodeID
		parent string
		table  *tableState
	}
	var cell struct {
		row, col int
		rowHead  string
	}
	root := nodes[0]
	var all []refItem // every element of a kept role, in order (kept or not)
	stack := []frame{{id: root.NodeID}}
	seen := map[accessibility.NodeID]bool{}
	const maxWalk = 200000 // nodes visited: bounded work on a huge page
	for walked := 0; len(stack) > 0 && walked < maxWalk; walked++ {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := byID[f.id]
		if n == nil || seen[f.id] {
			continue
		}
		seen[f.id] = true
		role := axText(n.Role)
		parent, table := f.parent, f.table
		if !n.Ignored && pageRoles[role] && n.BackendDOMNodeID != 0 {
			e := PageElement{ID: fmt.Sprintf("ax%d", n.BackendDOMNodeID), Role: role, Name: clip(onceName(axText(n.Name)), 200),
				Value: clip(axText(n.Value), 200), Parent: f.parent}
			if role == "MenuListOption" {
				e.Role = "option"
			}
			if e.Name == "" && (role == "alert" || role == "status" || role == "dialog" || role == "alertdialog") {
				e.Name = subtreeText(byID, n, 200)
			}
			if e.Name == "" && table != nil && actionRoles[e.Role] {
				// A control without a label in a table's cell (a form laid
				// out as a table, the row header saying what it is): named
				// by its row's and column's headers, as one reads it.
				e.Name = clip(strings.TrimSpace(cell.rowHead+" "+table.colHeads[cell.col]), 200)
			}
			base, node := refBase(e.Name, e.Role), pageNode{id: n.BackendDOMNodeID}
			if k := forest.frameOf[n.NodeID]; k > 0 {
				// An element of a frame says which: "Email (frame Newsletter)".
				base += " (frame " + forest.frames[k].label + ")"
				node.frame = forest.frames[k].target
				e.ID = fmt.Sprintf("ax%d", n.BackendDOMNodeID) + "@" + fmt.Sprint(k)
			}
			all = append(all, refItem{base: base, action: actionRoles[e.Role], node: node})
			for _, pr := range n.Properties {
				v := axText(pr.Value)
				switch pr.Name {
				case "required":
					e.Required = v == "true"
				case "invalid":
					e.Invalid = v != "" && v != "false"
				case "checked":
					e.Checked = v == "true" || v == "mixed"
				case "selected":
					e.Selected = v == "true"
				case "disabled":
					e.Disabled = v == "true"
				case "level":
					fmt.Sscan(v, &e.Level)
				}
			}
			switch role {
			case "table", "grid":
				table = &tableState{id: e.ID, colHeads: map[int]string{}}
			case "row":
				if table != nil {
					table.row++
					cell.row, cell.col, cell.rowHead = table.row, 0, ""
				}
			case "cell", "gridcell", "columnheader", "rowheader":
				if table != nil {
					cell.col++
					e.Table, e.Row, e.Col = table.id, cell.row, cell.col
					switch role {
					case "columnheader":
						table.colHeads[cell.col] = e.Name
					case "rowheader":
						cell.rowHead = e.Name
					default:
						e.ColHeader, e.RowHeader = table.colHeads[cell.col], cell.rowHead
					}
				}
			}
			p.Total++
			if len(p.Elements) < max {
				p.Elements = append(p.Elements, e)
			}
			parent = e.ID
		}
		if forest.opaque[n.NodeID] {
			continue // a native input's parts
		}
		for i := len(n.ChildIDs) - 1; i >= 0; i-- {
			stack = append(stack, frame{id: n.ChildIDs[i], parent: parent, table: table})
		}
	}
	p.Truncated = p.Total > len(p.Elements)
	assignRefs(p, all)
}

// refItem is what a ref is made of: an element's ref base (refBase),
// whether one acts on it, and its node.
type refItem struct {
	base   string
	action bool
	node   pageNode
}

// actionRoles are the roles of elements one acts on: they take refs
// before the other elements, so that a button "Sign in" under a heading
// "Sign in" is "Sign in" and the heading "Sign in #2".
var actionRoles = map[string]bool{"button": true, "link": true, "textbox": true, "searchbox": true,
	"combobox": true, "listbox": true, "checkbox": true, "radio": true, "spinbutton": true,
	"slider": true, "switch": true, "menuitem": true, "tab": true, "treeitem": true,
	"menuitemcheckbox": true, "menuitemradio": true, "radiogroup": true, "group": true,
	"date": true, "time": true, "datetime-local": true, "month": true, "week": true, "color": true, "file": true}

// onceName is name with a repeat collapsed: Chromium names some parts of
// native inputs twice ("Day Day", "Show date picker Show date picker").
func onceName(name string) string {
	if h := len(name) / 2; len(name)%2 == 1 && name[h] == ' ' && name[:h] == name[h+1:] {
		return name[:h]
	}
	return name
}

// assignRefs gives every element of a kept role its ref (see
// PageElement.Ref), whether p keeps it or only counts it, and fills
// p.refs: elements one acts on first, in document order, then the others;
// a repeated name gets " #2", " #3", .... all[i] is element i's when
// i < len(p.Elements).
func assignRefs(p *Page, all []refItem) {
	p.refs = make(map[string]pageNode, len(all))
	repeats := map[string]int{}
	give := func(i int) {
		base, ref := all[i].base, all[i].base
		for k := repeats[base] + 1; ; k++ {
			if k > 1 {
				ref = fmt.Sprintf("%s #%d", base, k)
			}
			if _, taken := p.refs[ref]; !taken {
				repeats[base] = k
				break
			}
		}
		p.refs[ref] = all[i].node
		if i < len(p.Elements) {
			p.Elements[i].Ref = ref
		}
	}
	for _, first := range []bool{true, false} {
		for i := range all {
			if all[i].action == first {
				give(i)
			}
		}
	}
}

// Match returns the first max elements whose name or value contains text
// (case-insensitively), and how many match in all.
func (p *Page) Match(text string, max int) (out []PageElement, total int) {
	text = strings.ToLower(text)
	for _, e := range p.Elements {
		if strings.Contains(strings.ToLower(e.Name), text) || strings.Contains(strings.ToLower(e.Value), text) {
			total++
			if len(out) < max {
				out = append(out, e)
			}
		}
	}
	return out, total
}

// Rows returns the cells of the first max table rows (of any table) with
// a cell that contains value (case-insensitively), and how many rows
// match in all.
func (p *Page) Rows(value string, max int) (out []PageElement, total int) {
	value = strings.ToLower(value)
	type key struct {
		table string
		row   int
	}
	hit := map[key]bool{}
	var order []key
	for _, e := range p.Elements {
		k := key{e.Table, e.Row}
		if e.Table == "" || hit[k] || !strings.Contains(strings.ToLower(e.Name), value) {
			continue
		}
		hit[k] = true
		order = append(order, k)
	}
	keep := map[key]bool{}
	for i, k := range order {
		if i < max {
			keep[k] = true
		}
	}
	for _, e := range p.Elements {
		if keep[key{e.Table, e.Row}] {
			out = append(out, e)
		}
	}
	return out, len(order)
}

// subtreeText is the static text under n, joined by spaces, at most max
// bytes (an alert's or status message's text when it has no name).
func subtreeText(byID map[accessibility.NodeID]*accessibility.Node, n *accessibility.Node, max int) string {
	var b strings.Builder
	stack := append([]accessibility.NodeID(nil), n.ChildIDs...)
	for walked := 0; len(stack) > 0 && b.Len() < max && walked < 1000; walked++ {
		id := stack[0]
		stack = stack[1:]
		c := byID[id]
		if c == nil {
			continue
		}
		if axText(c.Role) == "StaticText" {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(axText(c.Name))
			continue
		}
		stack = append(append([]accessibility.NodeID(nil), c.ChildIDs...), stack...)
	}
	return clip(b.String(), max)
}
