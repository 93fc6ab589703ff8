package conformance

import (
	"fmt"
	"sort"
	"strings"

	"github.com/manglecp/manglecp/protocol"
)

func checkManifestDelivered(r *runner) outcome {
	m := r.w.manifest()
	if r.manifestErr != "" {
		return fail("%s", r.manifestErr)
	}
	var f failures
	if hw, ok := r.w.(*httpWire); ok && m.Status != 200 {
		f.add("GET %s answered HTTP %d", hw.manifestURL, m.Status)
	}
	if m.Env.ID != nil {
		f.add("the manifest has id %q; it must be null", *m.Env.ID)
	}
	if m.Env.Version != protocol.Version {
		f.add("the envelope's manglecp is %q, want %q", m.Env.Version, protocol.Version)
	}
	return f.result("manifest of %d bytes", len(r.manifestRaw))
}

// fieldSpec is a required field and its JSON type.
type fieldSpec struct {
	path []string
	typ  string // string, integer, boolean, object, array
}

func checkManifestRequired(r *runner) outcome {
	fields := []fieldSpec{
		{[]string{"server_name"}, "string"},
		{[]string{"server_version"}, "string"},
		{[]string{"protocol"}, "object"},
		{[]string{"protocol", "manglecp"}, "string"},
		{[]string{"status"}, "string"},
		{[]string{"domain"}, "object"},
		{[]string{"domain", "id"}, "string"},
		{[]string{"domain", "description"}, "string"},
		{[]string{"facts_profile"}, "object"},
		{[]string{"facts_profile", "time_formats"}, "array"},
		{[]string{"capabilities"}, "object"},
		{[]string{"capabilities", "temporal"}, "boolean"},
		{[]string{"limits"}, "object"},
		{[]string{"limits", "max_message_bytes"}, "integer"},
		{[]string{"limits", "max_facts_per_request"}, "integer"},
		{[]string{"limits", "max_derived_facts"}, "integer"},
		{[]string{"auth"}, "object"},
		{[]string{"auth", "required"}, "boolean"},
	}
	if r.w.kind() == "http" {
		fields = append(fields,
			fieldSpec{[]string{"endpoints"}, "object"},
			fieldSpec{[]string{"endpoints", "intent_eval"}, "string"},
			fieldSpec{[]string{"endpoints", "macro_invoke"}, "string"})
	}
	if req, _ := asBool(path(r.mmap, "auth", "required")); req {
		fields = append(fields, fieldSpec{[]string{"auth", "schemes"}, "array"})
	}
	var f failures
	for _, fs := range fields {
		name := strings.Join(fs.path, ".")
		v := path(r.mmap, fs.path...)
		if v == nil {
			f.add("%s is missing", name)
			continue
		}
		if got := jsonType(v); got != fs.typ {
			f.add("%s is a JSON %s, want %s", name, got, fs.typ)
			continue
		}
		if s, ok := v.(string); ok && strings.TrimSpace(s) == "" {
			f.add("%s is empty", name)
		}
	}
	if s, ok := stringsOf(path(r.mmap, "auth", "schemes")); ok && len(s) == 0 {
		if req, _ := asBool(path(r.mmap, "auth", "required")); req {
			f.add("auth.required is true but auth.schemes is empty")
		}
	}
	return f.result("%d required fields present", len(fields))
}

func checkManifestVersion(r *runner) outcome {
	var f failures
	v, _ := asString(path(r.mmap, "protocol", "manglecp"))
	if v != protocol.Version {
		f.add("protocol.manglecp is %q, want %q", v, protocol.Version)
	}
	if sv := path(r.mmap, "protocol", "supported_versions"); sv != nil {
		list, ok := stringsOf(sv)
		switch {
		case !ok:
			f.add("protocol.supported_versions is not an array of strings")
		case !contains(list, protocol.Version):
			f.add("protocol.supported_versions %v lacks %s", list, protocol.Version)
		}
	}
	return f.result("%s", protocol.Version)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func checkManifestStatus(r *runner) outcome {
	st, ok := asString(r.mmap["status"])
	if !ok {
		return fail("status is missing or not a string")
	}
	switch protocol.Status(st) {
	case protocol.StatusReady, protocol.StatusDegraded:
		return pass("%s", st)
	case protocol.StatusBooting, protocol.StatusDraining:
		return fail("the server is still %s after %s; no request can be checked", st, r.opts.DialTimeout)
	}
	return fail("status %q is not ready, booting, degraded or draining", st)
}

func checkManifestLevel(r *runner) outcome {
	v := path(r.mmap, "protocol", "conformance_level")
	if v == nil {
		return fail("protocol.conformance_level is missing (Spec 10 section 3.1: servers MUST declare their level)")
	}
	n, ok := asInt(v)
	if !ok || n < 1 || n > 3 {
		return fail("protocol.conformance_level is %v, want 1, 2 or 3", v)
	}
	return pass("level %d", n)
}

func checkManifestIntents(r *runner) outcome {
	v, present := r.mmap["intents"]
	if !present {
		return pass("no intents declared (the list may be non-exhaustive)")
	}
	list, ok := asArray(v)
	if !ok {
		return fail("intents is a JSON %s, want array", jsonType(v))
	}
	declared := map[string]bool{}
	preds, hasPreds := asArray(path(r.mmap, "facts_profile", "predicates"))
	for _, p := range preds {
		if name, ok := asString(path(p, "predicate")); ok {
			declared[name] = true
		}
	}
	var f failures
	seen := map[string]bool{}
	f.eachObject(list, "intents", func(i int, in map[string]any) {
		name, _ := asString(in["name"])
		if name == "" {
			f.add("intents[%d].name is missing", i)
		}
		f.once(seen, name, "intent %q is declared twice")
		if d, ok := asString(in["description"]); !ok || d == "" {
			f.add("intent %q has no description", name)
		}
		for _, key := range []string{"required_facts", "optional_facts"} {
			fv, present := in[key]
			if !present {
				continue
			}
			names, ok := stringsOf(fv)
			if !ok {
				f.add("intent %q: %s is not an array of strings", name, key)
				continue
			}
			for _, p := range names {
				if hasPreds && !declared[p] {
					f.add("intent %q: %s names %q, which facts_profile.predicates does not declare", name, key, p)
				}
			}
		}
	})
	return f.result("%d intents", len(list))
}

func checkManifestTimeFormats(r *runner) outcome {
	list, ok := stringsOf(path(r.mmap, "facts_profile", "time_formats"))
	if !ok {
		return fail("facts_profile.time_formats is missing or not an array of strings")
	}
	var f failures
	if !contains(list, "rfc3339") {
		f.add("time_formats %v lacks rfc3339, which servers MUST accept", list)
	}
	for _, t := range list {
		switch t {
		case "rfc3339", "epoch_ms", "epoch_ns":
		default:
			f.add("unknown time format %q", t)
		}
	}
	return f.result("%v", list)
}

func checkManifestCapabilities(r *runner) outcome {
	caps, ok := asObject(r.mmap["capabilities"])
	if !ok {
		return fail("capabilities is missing or not an object")
	}
	var f failures
	if _, ok := asBool(caps["temporal"]); !ok {
		f.add("capabilities.temporal is missing or not a boolean")
	}
	for _, k := range []string{"aggregation", "rule_submission", "subscriptions", "named_args"} {
		if v, present := caps[k]; present {
			if _, ok := asBool(v); !ok {
				f.add("capabilities.%s is a JSON %s, want boolean", k, jsonType(v))
			}
		}
	}
	if v, present := caps["external_predicates"]; present {
		if _, ok := asArray(v); !ok {
			f.add("capabilities.external_predicates is a JSON %s, want array", jsonType(v))
		}
	}
	return f.result("temporal %v", caps["temporal"])
}

func checkManifestLimits(r *runner) outcome {
	var f failures
	lim, ok := asObject(r.mmap["limits"])
	if !ok {
		return fail("limits is missing or not an object")
	}
	for _, k := range []string{"max_message_bytes", "max_facts_per_request", "max_derived_facts"} {
		n, ok := asInt(lim[k])
		if !ok || n < 1 {
			f.add("limits.%s is %v, want a positive integer", k, lim[k])
		}
	}
	for _, k := range []string{"max_intervals_per_atom", "max_compute_ms"} {
		if v, present := lim[k]; present && v != nil {
			if n, ok := asInt(v); !ok || n < 1 {
				f.add("limits.%s is %v, want a positive integer", k, v)
			}
		}
	}
	if n, ok := asInt(lim["max_message_bytes"]); ok && n < 16<<20 {
		f.add("limits.max_message_bytes is %d; servers MUST accept messages of at least 16 MiB (16777216)", n)
	}
	return f.result("max_message_bytes %v, max_facts_per_request %v, max_derived_facts %v",
		lim["max_message_bytes"], lim["max_facts_per_request"], lim["max_derived_facts"])
}

func checkManifestAuth(r *runner) outcome {
	auth, ok := asObject(r.mmap["auth"])
	if !ok {
		return fail("auth is missing or not an object")
	}
	var f failures
	req, ok := asBool(auth["required"])
	if !ok {
		f.add("auth.required is missing or not a boolean")
	}
	var schemes []string
	if v, present := auth["schemes"]; present && v != nil {
		s, ok := stringsOf(v)
		if !ok {
			f.add("auth.schemes is not an array of strings")
		}
		schemes = s
	}
	if req && len(schemes) == 0 {
		f.add("auth.required is true but no auth.schemes are listed")
	}
	for _, s := range schemes {
		switch s {
		case protocol.SchemeBearer, protocol.SchemeAPIKey, protocol.SchemeOAuth2:
		default:
			if !strings.HasPrefix(s, "x-") {
				f.add("unknown auth scheme %q", s)
			}
		}
	}
	if contains(schemes, protocol.SchemeOAuth2) {
		if u, ok := asString(auth["token_url"]); !ok || u == "" {
			f.add("auth.schemes lists oauth2 but auth.token_url is missing")
		}
	}
	if contains(schemes, protocol.SchemeAPIKey) && !contains(schemes, protocol.SchemeBearer) {
		f.add("auth.schemes lists api_key without bearer (servers supporting API keys MUST also accept bearer tokens)")
	}
	if v, present := auth["token_url"]; present && v != nil {
		if _, ok := asString(v); !ok {
			f.add("auth.token_url is a JSON %s, want string or null", jsonType(v))
		}
	}
	return f.result("required %v, schemes %v", req, schemes)
}

func checkManifestExtensions(r *runner) outcome {
	v, present := r.mmap["extensions"]
	if !present || v == nil {
		return pass("no extensions")
	}
	ext, ok := asObject(v)
	if !ok {
		return fail("extensions is a JSON %s, want object", jsonType(v))
	}
	var f failures
	keys := sortedKeys(ext)
	for _, k := range keys {
		if !strings.HasPrefix(k, "x-") {
			f.add("extension key %q does not start with x-", k)
		}
	}
	return f.result("%d extensions", len(keys))
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// toolListKeys are keys that would enumerate tools.
var toolListKeys = map[string]bool{"tools": true, "tool_list": true, "macro_tools": true, "available_tools": true,
	"list_tools": true, "tool_names": true, "macro_tool_list": true}

func checkManifestNoTools(r *runner) outcome {
	var f failures
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(x) {
				p := k
				if at != "" {
					p = at + "." + k
				}
				if toolListKeys[strings.ToLower(k)] {
					f.add("the manifest has %s", p)
				}
				walk(x[k], p)
			}
		case []any:
			for i, e := range x {
				walk(e, fmt.Sprintf("%s[%d]", at, i))
			}
		}
	}
	walk(r.mmap, "")
	return f.result("no tool list")
}

func checkManifestFactsProfile(r *runner) outcome {
	v := path(r.mmap, "facts_profile", "predicates")
	list, ok := asArray(v)
	if !ok || len(list) == 0 {
		return fail("facts_profile.predicates is missing or empty; level 3 requires predicate schema declarations")
	}
	var f failures
	seen := map[string]bool{}
	inputs := 0
	f.eachObject(list, "predicates", func(i int, p map[string]any) {
		name, _ := asString(p["predicate"])
		if !predicatePattern.MatchString(name) || len(name) > 128 {
			f.add("predicates[%d].predicate %q is not [a-z][a-z0-9_]* of at most 128 characters", i, name)
		}
		if strings.HasPrefix(name, "_manglecp_") {
			f.add("predicate %q uses the reserved prefix", name)
		}
		f.once(seen, name, "predicate %q is declared twice")
		arity, ok := asInt(p["arity"])
		if !ok || arity < 0 {
			f.add("predicate %q: arity %v is not a non-negative integer", name, p["arity"])
			return
		}
		if tv, present := p["arg_types"]; present {
			types, ok := stringsOf(tv)
			switch {
			case !ok:
				f.add("predicate %q: arg_types is not an array of strings", name)
			case int64(len(types)) != arity:
				f.add("predicate %q: %d arg_types for arity %d", name, len(types), arity)
			default:
				for _, t := range types {
					switch t {
					case protocol.ArgString, protocol.ArgNumber, protocol.ArgBoolean, protocol.ArgAny:
					default:
						f.add("predicate %q: unknown arg type %q", name, t)
					}
				}
			}
		}
		if nv, present := p["arg_names"]; present {
			names, ok := stringsOf(nv)
			if !ok || int64(len(names)) != arity {
				f.add("predicate %q: arg_names is not %d strings", name, arity)
			}
		}
		if tv, present := p["temporal"]; present {
			if _, ok := asBool(tv); !ok {
				f.add("predicate %q: temporal is not a boolean", name)
			}
		}
		dir := "both"
		if dv, present := p["direction"]; present {
			dir, _ = asString(dv)
			switch dir {
			case protocol.DirectionInput, protocol.DirectionOutput, protocol.DirectionBoth:
			default:
				f.add("predicate %q: direction %v is not input, output or both", name, dv)
			}
		}
		if dir != protocol.DirectionOutput {
			inputs++
		}
	})
	if inputs == 0 {
		f.add("no predicate clients may send (direction input or both)")
	}
	return f.result("%d predicates, %d a client may send", len(list), inputs)
}

func checkManifestExternal(r *runner) outcome {
	v := path(r.mmap, "capabilities", "external_predicates")
	if v == nil {
		return pass("no external predicates declared")
	}
	list, ok := asArray(v)
	if !ok {
		return fail("capabilities.external_predicates is a JSON %s, want array", jsonType(v))
	}
	var f failures
	f.eachObject(list, "external_predicates", func(i int, e map[string]any) {
		name, _ := asString(e["predicate"])
		if !predicatePattern.MatchString(name) {
			f.add("external_predicates[%d].predicate %q is not a predicate name", i, name)
		}
		if n, ok := asInt(e["arity"]); !ok || n < 0 {
			f.add("external predicate %q: arity %v is not a non-negative integer", name, e["arity"])
		}
		if d, ok := asString(e["description"]); !ok || d == "" {
			f.add("external predicate %q has no description", name)
		}
		if dv, present := e["deterministic"]; present {
			if _, ok := asBool(dv); !ok {
				f.add("external predicate %q: deterministic is not a boolean", name)
			}
		}
	})
	return f.result("%d external predicates", len(list))
}
