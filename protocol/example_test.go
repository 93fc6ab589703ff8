package protocol_test

import (
	"encoding/json"
	"fmt"

	"github.com/manglecp/manglecp/protocol"
)

// A server reads one message: DecodeEnvelope checks the envelope, then
// DecodePayload decodes the payload of the type it announced.
func ExampleDecodeEnvelope() {
	msg := []byte(`{
		"type": "intent_request",
		"id": "req-1",
		"manglecp": "2026-02-draft",
		"payload": {
			"intent": {"name": "observe"},
			"facts": [{"pred": "current_url", "args": ["https://example.com"]}],
			"eval_time": "2026-02-19T14:30:00Z"
		}
	}`)
	env, err := protocol.DecodeEnvelope(msg)
	if err != nil {
		// Answer with protocol.ErrorEnvelope(env.IDString(), err).
		fmt.Println(err)
		return
	}
	fmt.Println(env.Type, env.IDString())

	var req protocol.IntentRequest
	if err := protocol.DecodePayload(env.Payload, &req); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(req.Intent.Name, req.EvalTime.UTC().Format("15:04"))
	for _, f := range req.Facts {
		fmt.Println(f.Pred, f.Args)
	}
	// Output:
	// intent_request req-1
	// observe 14:30
	// current_url [https://example.com]
}

// A server that reads many intent requests keeps one list for their raw
// facts: DecodeEnvelopeInto splits payload.facts into it while checking
// the message, and DecodePayloadList hands the items over without
// scanning the list again.
func ExampleDecodeEnvelopeInto() {
	var buffer []json.RawMessage // kept from one message to the next
	for _, msg := range []string{
		`{"type":"intent_request","id":"1","manglecp":"2026-02-draft","payload":{"intent":{"name":"observe"},"facts":[{"pred":"a","args":[1]},{"pred":"b","args":["x"]}]}}`,
		`{"type":"intent_request","id":"2","manglecp":"2026-02-draft","payload":{"intent":{"name":"observe"},"facts":[{"pred":"c","args":[]}]}}`,
	} {
		env, used, err := protocol.DecodeEnvelopeInto([]byte(msg), buffer)
		if err != nil {
			fmt.Println(err)
			continue
		}
		var req struct {
			Intent protocol.Intent   `json:"intent"`
			Facts  []json.RawMessage `json:"facts"`
		}
		if err := protocol.DecodePayloadList(env, &req, "facts", &req.Facts); err != nil {
			fmt.Println(err)
			continue
		}
		for _, raw := range req.Facts {
			fmt.Println(env.IDString(), string(raw))
		}
		// Done with the message: empty the items (they are slices of it)
		// and keep the larger array for the next one.
		clear(used)
		if cap(used) > cap(buffer) {
			buffer = used[:0]
		}
	}
	// Output:
	// 1 {"pred":"a","args":[1]}
	// 1 {"pred":"b","args":["x"]}
	// 2 {"pred":"c","args":[]}
}

// An unsupported version is reported with the versions the server speaks,
// correlated to the request's id.
func ExampleDecodeEnvelope_unsupportedVersion() {
	env, err := protocol.DecodeEnvelope([]byte(`{"type":"intent_request","id":"req-1","manglecp":"2025-01-draft","payload":{}}`))
	reply, _ := protocol.ErrorEnvelope(env.IDString(), err).Encode()
	fmt.Println(err.HTTPStatus())
	fmt.Println(string(reply))
	// Output:
	// 400
	// {"type":"error","id":"req-1","manglecp":"2026-02-draft","payload":{"code":"unsupported_version","message":"protocol version \"2025-01-draft\" is not supported; use \"2026-02-draft\"","details":{"requested_version":"2025-01-draft","supported_versions":["2026-02-draft"]},"recoverable":true,"retry_after_ms":null}}
}

// ValidateFacts checks client facts against the server's facts profile and
// reports every violation at once; FactsError turns them into the error to
// send.
func ExampleValidateFacts() {
	profile := &protocol.FactsProfile{
		TimeFormats: []string{"rfc3339"},
		Predicates: []protocol.PredicateSchema{{
			Predicate: "console_event",
			Arity:     4,
			ArgTypes:  []string{"string", "string", "string", "number"},
			ArgNames:  []string{"session_id", "level", "message", "timestamp"},
			Temporal:  true,
		}},
	}
	facts := []protocol.Fact{
		protocol.NewFact("console_event", "s1", "error", "TypeError"),
		protocol.NewFact("console_evnt", "s1", "error", "TypeError", 1),
	}
	valid, violations := protocol.ValidateFacts(facts, profile, protocol.Assert, nil)
	fmt.Println("valid facts:", len(valid))
	for _, v := range violations {
		fmt.Printf("fact %d: %s: %s\n", v.FactIndex, v.Issue, v.Message)
		if v.Suggestion != "" {
			fmt.Println("  suggestion:", v.Suggestion)
		}
	}
	err := protocol.FactsError(violations)
	fmt.Println(err.Code, err.Recoverable, err.HTTPStatus())
	// Output:
	// valid facts: 0
	// fact 0: arity_mismatch: Predicate 'console_event' expects 4 arguments (session_id, level, message, timestamp), got 3
	// fact 1: unknown_predicate: Predicate 'console_evnt' is not declared in the server's facts profile
	//   suggestion: Did you mean 'console_event'?
	// invalid_facts true 400
}

// A server with work of its own on every valid fact does it inside the
// check, part by part, on the goroutines that checked each part: here it
// counts error events. Each part writes only its own count.
func ExampleFactsCheck() {
	profile := &protocol.FactsProfile{
		Predicates: []protocol.PredicateSchema{{
			Predicate: "console_event",
			Arity:     2,
			ArgTypes:  []string{"string", "string"},
			ArgNames:  []string{"level", "message"},
		}},
	}
	raws := []json.RawMessage{
		json.RawMessage(`{"pred":"console_event","args":["error","TypeError"]}`),
		json.RawMessage(`{"pred":"console_event","args":["info","loaded"]}`),
		json.RawMessage(`{"pred":"console_evnt","args":["error","lost"]}`),
	}
	check := protocol.NewFactsCheck(raws, "diagnose_error", profile, nil)
	errors := make([]int, check.Parts())
	checked := check.Run(func(k int, valid []protocol.Fact) {
		for _, f := range valid {
			if f.Args[0] == "error" {
				errors[k]++
			}
		}
	})
	total := 0
	for _, n := range errors {
		total += n
	}
	fmt.Println("valid facts:", len(checked.Facts), "errors among them:", total)
	fmt.Println("error:", checked.Err().Code)
	// Output:
	// valid facts: 2 errors among them: 1
	// error: unknown_predicate
}
