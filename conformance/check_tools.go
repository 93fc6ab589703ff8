package conformance

import (
	"strings"

	"github.com/manglecp/manglecp/protocol"
)

// presence is the field presence table of Spec 06 section 2.2: for each
// level, the fields that must be present and those that must be absent.
var presence = map[string]struct{ required, omitted []string }{
	protocol.DisclosureFull: {
		required: []string{"macro_id", "name", "description", "disclosure_level", "input_schema", "safety"},
	},
	protocol.DisclosureCondensed: {
		required: []string{"macro_id", "name", "description", "disclosure_level"},
		omitted:  []string{"input_schema", "output_schema", "context_injection", "safety", "validity"},
	},
	protocol.DisclosureMinimal: {
		required: []string{"macro_id", "name", "disclosure_level"},
		omitted:  []string{"description", "input_schema", "output_schema", "context_injection", "safety", "validity", "metadata"},
	},
}

// checkPresence judges one macro-tool against the presence table of its
// disclosure_level.
func checkPresence(f *failures, t map[string]any) {
	name, _ := asString(t["name"])
	level, _ := asString(t["disclosure_level"])
	rule, ok := presence[level]
	if !ok {
		f.add("%s: disclosure_level %v is not full, condensed or minimal", name, t["disclosure_level"])
		return
	}
	for _, k := range rule.required {
		if v, present := t[k]; !present || v == nil {
			f.add("%s (%s) lacks %s", name, level, k)
		}
	}
	for _, k := range rule.omitted {
		if v, present := t[k]; present && v != nil {
			f.add("%s (%s) has %s, which %s disclosure omits", name, level, k, level)
		}
	}
	if level == protocol.DisclosureCondensed {
		if d, _ := asString(t["description"]); strings.Contains(d, "\n") {
			f.add("%s (condensed): the description is not one line", name)
		}
	}
	if len(name) > 64 {
		f.add("name %q is longer than 64 characters", name)
	}
}

// mainTools returns the main response's tools as maps, or an outcome to
// return when there are none.
func (r *runner) mainTools() ([]map[string]any, *mainRequest, *outcome) {
	m := r.mainReq()
	if m == nil {
		o := r.noMain()
		return nil, nil, &o
	}
	tools := toolMaps(m.fullMap)
	if len(tools) == 0 {
		o := skip("%s selects no macro-tool", m.desc)
		return nil, m, &o
	}
	return tools, m, nil
}

// eachMainTool runs check on each macro-tool of the main request's
// answer with its name, and words the outcome with the number of tools
// and what (a main request that selects none is a skip).
func (r *runner) eachMainTool(what string, check func(f *failures, name string, t map[string]any)) outcome {
	tools, _, o := r.mainTools()
	if o != nil {
		return *o
	}
	var f failures
	for _, t := range tools {
		name, _ := asString(t["name"])
		check(&f, name, t)
	}
	return f.result("%d "+what, len(tools))
}

func checkToolsFull(r *runner) outcome {
	return r.eachMainTool("macro-tools at full disclosure", func(f *failures, name string, t map[string]any) {
		if t["disclosure_level"] != protocol.DisclosureFull {
			f.add("%s is %v although full disclosure was asked for", name, t["disclosure_level"])
		}
		checkPresence(f, t)
		if d, _ := asString(t["description"]); strings.TrimSpace(d) == "" && has(t, "description") {
			f.add("%s has an empty description", name)
		}
		if _, ok := asObject(t["input_schema"]); !ok && has(t, "input_schema") {
			f.add("%s: input_schema is not an object", name)
		}
		if s, ok := asObject(t["safety"]); ok {
			if _, ok := asBool(s["requires_user_confirmation"]); !ok {
				f.add("%s: safety.requires_user_confirmation is not a boolean", name)
			}
			if _, ok := stringsOf(s["side_effects"]); !ok {
				f.add("%s: safety.side_effects is not an array of strings", name)
			}
			for _, k := range []string{"reversible", "idempotent"} {
				if v, present := s[k]; present {
					if _, ok := asBool(v); !ok {
						f.add("%s: safety.%s is not a boolean", name, k)
					}
				}
			}
		} else if has(t, "safety") {
			f.add("%s: safety is not an object", name)
		}
		if v, present := t["output_schema"]; present && v != nil {
			if _, ok := asObject(v); !ok {
				f.add("%s: output_schema is not an object", name)
			}
		}
		if v, present := t["metadata"]; present && v != nil {
			md, ok := asObject(v)
			if !ok {
				f.add("%s: metadata is not an object", name)
			} else if sc, present := md["score"]; present {
				if _, ok := asNumber(sc); !ok {
					f.add("%s: metadata.score is not a number", name)
				}
			}
		}
	})
}

func checkToolsInputSchema(r *runner) outcome {
	return r.eachMainTool("input schemas", func(f *failures, name string, t map[string]any) {
		s, ok := asObject(t["input_schema"])
		if !ok {
			f.add("%s has no input_schema object", name)
			return
		}
		if typ, present := s["type"]; present && typ != "object" {
			f.add("%s: input_schema.type is %v; invocation args are an object", name, typ)
		}
		if v, present := s["$schema"]; present {
			if _, ok := asString(v); !ok {
				f.add("%s: input_schema.$schema is not a string", name)
			}
		}
		props, hasProps := asObject(s["properties"])
		if v, present := s["properties"]; present && !hasProps {
			f.add("%s: input_schema.properties is a JSON %s", name, jsonType(v))
		}
		for k, p := range props {
			if _, ok := asObject(p); !ok {
				if _, isBool := asBool(p); !isBool {
					f.add("%s: property %s is not a schema", name, k)
				}
			}
		}
		if v, present := s["required"]; present {
			req, ok := stringsOf(v)
			if !ok {
				f.add("%s: input_schema.required is not an array of strings", name)
			}
			for _, k := range req {
				if hasProps {
					if _, ok := props[k]; !ok {
						f.add("%s: required property %s is not in properties", name, k)
					}
				}
			}
		}
	})
}

// disclosed evaluates the main request at a disclosure preference.
func (r *runner) disclosed(pref string) ([]map[string]any, *mainRequest, *outcome) {
	_, m, o := r.mainTools()
	if o != nil {
		return nil, m, o
	}
	_, p, _, problem := r.evaluate(m.req.withOption("disclosure_preference", pref))
	if problem != "" {
		out := fail("%s at %s disclosure: %s", m.desc, pref, problem)
		return nil, m, &out
	}
	return toolMaps(p), m, nil
}

func checkToolsAtLevel(r *runner, level string) outcome {
	tools, m, o := r.disclosed(level)
	if o != nil {
		return *o
	}
	var f failures
	var names []string
	for _, t := range tools {
		name, _ := asString(t["name"])
		names = append(names, name)
		if t["disclosure_level"] != level {
			f.add("%s is %v, want %s", name, t["disclosure_level"], level)
			continue
		}
		checkPresence(&f, t)
	}
	sortStrings(names)
	var want []string
	for _, t := range m.tools() {
		want = append(want, t.Name)
	}
	sortStrings(want)
	if strings.Join(names, " ") != strings.Join(want, " ") {
		f.add("%s disclosure selected [%s], full disclosure [%s]; disclosure must not change the selection",
			level, strings.Join(names, " "), strings.Join(want, " "))
	}
	return f.result("%d macro-tools at %s disclosure", len(tools), level)
}

func checkToolsCondensed(r *runner) outcome {
	return checkToolsAtLevel(r, protocol.DisclosureCondensed)
}
func checkToolsMinimal(r *runner) outcome { return checkToolsAtLevel(r, protocol.DisclosureMinimal) }

var levelRank = map[string]int{protocol.DisclosureMinimal: 1, protocol.DisclosureCondensed: 2, protocol.DisclosureFull: 3}

func checkToolsAdaptive(r *runner) outcome {
	tools, m, o := r.disclosed(protocol.DisclosureAdaptive)
	if o != nil {
		return *o
	}
	scores := map[string]int64{}
	for _, t := range m.tools() {
		if t.Metadata != nil {
			scores[t.Name] = t.Metadata.Score
		}
	}
	var f failures
	for _, t := range tools {
		checkPresence(&f, t)
	}
	for _, a := range tools {
		for _, b := range tools {
			an, _ := asString(a["name"])
			bn, _ := asString(b["name"])
			sa, okA := scores[an]
			sb, okB := scores[bn]
			la, _ := asString(a["disclosure_level"])
			lb, _ := asString(b["disclosure_level"])
			if okA && okB && sa > sb && levelRank[la] < levelRank[lb] {
				f.add("%s (score %d) is %s but %s (score %d) is %s", an, sa, la, bn, sb, lb)
			}
		}
	}
	levels := make([]string, 0, len(tools))
	for _, t := range tools {
		levels = append(levels, asStringOr(t["name"])+"="+asStringOr(t["disclosure_level"]))
	}
	return f.result("adaptive: %s", strings.Join(levels, " "))
}

func asStringOr(v any) string {
	s, _ := asString(v)
	return s
}

var sideEffects = map[string]bool{"none": true, "filesystem": true, "network": true, "database": true, "browser": true,
	"process": true, "payments": true, "authentication": true, "destructive": true}

func checkToolsSafety(r *runner) outcome {
	return r.eachMainTool("macro-tools classified", func(f *failures, name string, t map[string]any) {
		effects, ok := stringsOf(path(t, "safety", "side_effects"))
		if !ok {
			f.add("%s: safety.side_effects is missing", name)
			return
		}
		for _, e := range effects {
			if !sideEffects[e] && !strings.HasPrefix(e, "x-") {
				f.add("%s: side effect %q is neither standard nor x-", name, e)
			}
			if e == "none" && len(effects) > 1 {
				f.add("%s: side effects %v combine none with others", name, effects)
			}
		}
	})
}

// once records key in seen; a key seen before is a failure, worded by
// format with the key.
func (f *failures) once(seen map[string]bool, key, format string) {
	if seen[key] {
		f.add(format, key)
	}
	seen[key] = true
}

// eachObject calls fn with the index and the object of each element of
// list; an element that is not an object is a failure, named what[i].
func (f *failures) eachObject(list []any, what string, fn func(i int, obj map[string]any)) {
	for i, x := range list {
		obj, ok := asObject(x)
		if !ok {
			f.add("%s[%d] is not an object", what, i)
			continue
		}
		fn(i, obj)
	}
}

// eachToolObject calls fn with the name of each tool that carries key and
// the object it holds there, and counts them; a tool whose key holds
// something other than an object is a failure (absent or null: skipped).
func eachToolObject(tools []map[string]any, key string, f *failures, fn func(name string, obj map[string]any)) int {
	n := 0
	for _, t := range tools {
		name, _ := asString(t["name"])
		v, present := t[key]
		if !present || v == nil {
			continue
		}
		n++
		obj, ok := asObject(v)
		if !ok {
			f.add("%s: %s is not an object", name, key)
			continue
		}
		fn(name, obj)
	}
	return n
}

// mainToolObjects is eachToolObject on the tools of the main request's
// answer; the outcome is set when the main request selects none.
func (r *runner) mainToolObjects(key string, f *failures, fn func(name string, obj map[string]any)) (*mainRequest, int, *outcome) {
	tools, m, o := r.mainTools()
	if o != nil {
		return nil, 0, o
	}
	return m, eachToolObject(tools, key, f, fn), nil
}

func checkToolsContext(r *runner) outcome {
	var f failures
	m, n, o := r.mainToolObjects("context_injection", &f, func(name string, c map[string]any) {
		if v, present := c["instructions"]; present {
			if _, ok := asString(v); !ok {
				f.add("%s: instructions is not a string", name)
			}
		}
		for i, x := range arrayOr(c["skills"]) {
			s, _ := asObject(x)
			if id, _ := asString(s["skill_id"]); id == "" {
				f.add("%s: skills[%d] has no skill_id", name, i)
			}
			inline, ok := asBool(s["inline"])
			if !ok {
				f.add("%s: skills[%d].inline is not a boolean", name, i)
			}
			if content, _ := asString(s["content"]); inline && content == "" {
				f.add("%s: inline skill %v has no content", name, s["skill_id"])
			}
		}
		for i, x := range arrayOr(c["context_resources"]) {
			res, _ := asObject(x)
			if u, _ := asString(res["uri"]); u == "" {
				f.add("%s: context_resources[%d] has no uri", name, i)
			}
			if v, present := res["priority"]; present && v != nil {
				if p, ok := asNumber(v); !ok || p < 0 || p > 100 {
					f.add("%s: context_resources[%d].priority %v is not 0-100", name, i, v)
				}
			}
		}
	})
	if o != nil {
		return *o
	}
	for i, x := range arrayOr(m.fullMap["required_skills"]) {
		s, _ := asObject(x)
		for _, k := range []string{"skill_id", "name", "description", "content"} {
			if _, ok := asString(s[k]); !ok {
				f.add("required_skills[%d].%s is not a string", i, k)
			}
		}
	}
	return f.result("%d macro-tools with context injection, %d required skills", n, len(arrayOr(m.fullMap["required_skills"])))
}

func checkToolsValidity(r *runner) outcome {
	var f failures
	m, windows, o := r.mainToolObjects("validity", &f, func(name string, w map[string]any) {
		nb, hasNB := w["not_before"]
		ex, hasEx := w["expires_at"]
		tnb, okNB := parseTime(nb)
		tex, okEx := parseTime(ex)
		if hasNB && nb != nil && !okNB {
			f.add("%s: validity.not_before %v is not a Time", name, nb)
		}
		if hasEx && ex != nil && !okEx {
			f.add("%s: validity.expires_at %v is not a Time", name, ex)
		}
		if okNB && okEx && tex.Before(tnb) {
			f.add("%s: validity ends (%v) before it starts (%v)", name, ex, nb)
		}
	})
	if o != nil {
		return *o
	}
	ft := r.fixtureTemporal()
	if ft == nil {
		if windows == 0 {
			return skip("no macro-tool carries a validity window, and no fixture names one (fixture temporal)")
		}
		return f.result("%d validity windows well formed", windows)
	}
	q := m.req.clone()
	q.EvalTime = ft.Inside
	inside, _, _, problem := r.evaluate(q.withOption("disclosure_preference", protocol.DisclosureFull))
	if problem != "" {
		return fail("at eval_time %s: %s", ft.Inside, problem)
	}
	if findTool(inside.MacroTools, ft.Tool) == nil {
		f.add("at eval_time %s (inside the window) %s is not offered: %s", ft.Inside, ft.Tool, toolNames(inside.MacroTools))
	} else if t := findTool(inside.MacroTools, ft.Tool); t.Validity == nil || t.Validity.ExpiresAt == nil {
		f.add("%s has no validity.expires_at", ft.Tool)
	}
	q.EvalTime = ft.Outside
	outside, _, _, problem := r.evaluate(q.withOption("disclosure_preference", protocol.DisclosureFull))
	if problem != "" {
		return fail("at eval_time %s: %s", ft.Outside, problem)
	}
	if findTool(outside.MacroTools, ft.Tool) != nil {
		f.add("at eval_time %s (after the window) %s is still offered", ft.Outside, ft.Tool)
	}
	return f.result("%s offered at %s, not at %s", ft.Tool, ft.Inside, ft.Outside)
}

// fixtureTemporal returns the fixture's temporal part, if any.
func (r *runner) fixtureTemporal() *FixtureTemporal {
	if r.fixture == nil {
		return nil
	}
	return r.fixture.Temporal
}
