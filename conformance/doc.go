// Package conformance is a conformance suite for MangleCP servers (protocol
// 2026-02-draft, Spec 10 section 6). It runs against any server, ours or
// not, from the outside: it reads the manifest, drives the requests it
// needs from the manifest's intents and facts_profile (and from a fixture,
// when given), and judges every answer against the spec. Each check records
// the spec section and the conformance level it proves.
//
// It links the protocol and transport packages and the standard library
// only, never the Mangle engine nor the server, so a run against a foreign
// server is honest (TestDependencies enforces it).
//
// # Running
//
//	fixture, _ := conformance.LoadFixture("browser") // or a path to a JSON file
//	rep, err := conformance.Run(ctx, "http://127.0.0.1:8080", &conformance.Options{Fixture: fixture})
//	if err != nil { ... }         // the target could not be reached at all
//	fmt.Print(rep.Format())       // a line per check: PASS/FAIL/SKIP, ID, spec section, level
//	raw, _ := rep.JSON()          // the same report as JSON
//	if !rep.OK() { ... }          // some check failed
//
// From the command line:
//
//	manglecp conformance http://127.0.0.1:8080 --fixture browser
//	manglecp conformance ws://127.0.0.1:8080/manglecp/ws --fixture browser --json
//	manglecp conformance "stdio:manglecp serve --stdio" --fixture browser --level 2
//
// Targets are those of the client package: "http://" and "https://" (the
// host's /.well-known/manglecp/manifest.json, or the manifest's own URL),
// "ws://" and "wss://" (the WebSocket endpoint; /manglecp/ws when the URL
// has no path), "stdio:COMMAND ARGS..." (the suite starts the command and
// speaks over its stdin and stdout). A run covers one transport binding;
// Level 3 requires all three, so run the suite against each.
//
// # Levels
//
// Options.Level (default: the manifest's protocol.conformance_level, at
// most 3) is the level checked: checks of a higher level SKIP. Checks that
// do not apply to the target's transport SKIP, and so do the checks that
// need access when the server requires authentication and no
// Options.Token was given.
//
// # What the suite sends
//
// The checks cover the eight categories of Spec 10 section 6.1 (manifest,
// facts, evaluation, macro-tools, invocation, errors, security,
// transport), the determinism test of section 6.2 (100 identical intent
// requests must give the same macro_ids, disclosure levels and scores) and
// the gas test of section 6.3 (max_facts_created 10 must give
// derivation_limit_exceeded with details.budget). Among other things the
// suite sends one message of limits.max_message_bytes+1 bytes (16 MiB for a
// default server; on a session transport over a connection of its own, so
// on stdio it starts the command a second time), limits.max_facts_per_request+1
// facts, malformed JSON, requests of another version, and a slow request it
// cancels. It invokes only the fixture's tool, or, without a fixture, a
// macro-tool whose only side effect is "none", with arguments made from its
// input_schema; a tool that requires confirmation is invoked only without a
// token and with an invalid one, so it never runs.
//
// Some checks judge every answer the run received: the error envelope,
// registered codes, the registry's recoverable flags and HTTP statuses, id
// correlation, leaks of stack traces or file paths, the envelope of every
// message, the framing of every WebSocket frame and stdout line.
//
// # Fixtures
//
// A fixture (JSON, see [Fixture]) tells the suite how to exercise one
// domain; every part is optional and the checks that need a missing part
// SKIP:
//
//	{
//	  "name": "browser",
//	  "evaluate": {                       // an intent request that selects macro-tools
//	    "intent": {"name": "diagnose_error", "params": {"severity": "critical"}},
//	    "facts": [{"pred": "current_url", "args": ["https://app.example.com/dashboard"]}, ...],
//	    "eval_time": "2026-02-19T14:30:05Z"
//	  },
//	  "invoke": {"tool": "diagnose_causal_chain", "args": {"request_id": "r42"},
//	             "eval_time": "2026-02-19T14:30:10Z", "expect_next": true},
//	  "confirmation": {"tool": "write_diagnosis_report", "args": {"request_id": "r42"}},
//	  "temporal": {"tool": "diagnose_causal_chain",
//	               "inside": "2026-02-19T14:30:05Z", "outside": "2026-02-19T14:40:00Z"},
//	  "slow": {"intent": {"name": "diagnose_error"}, "facts": [...],
//	           "repeat": {"pred": "console_event", "args": ["s1", "error", "error {i}", "{i:number}"]},
//	           "count": 8000}
//	}
//
// "repeat" may also be a list of templates, each copied count times, so
// that the copies join each other (a quadratic join is the slowest request
// a server's work budget lets through).
//
// Without "evaluate", the suite probes the manifest's intents with a sample
// fact of each required predicate and uses the first that selects a
// macro-tool. The fixture for the default browser-diagnostics domain is
// built in ([BuiltinFixture]("browser"), --fixture browser) and lives in
// testdata/browser.json.
//
// # Tests of the suite
//
// The suite's own tests run it against our server over HTTP, WebSocket and
// stdio at level 3 and require no FAIL beyond baseline.json (a list of known
// gaps that may only shrink; it is empty), and run it against servers broken
// on purpose, one breakage per check, to prove that every check can fail.
// docs/conformance-suite.md lists every check.
package conformance
