#!/bin/sh
# A MangleCP session exported by manglecp inspect at 2026-11-22T12:00:00Z.
# Server: manglecp-go 0.1.0, domain browser_diagnostics, protocol 2026-02-draft.
# Replays 4 request(s) with curl over HTTP, in order.
# Evaluations pin eval_time to the time the server used, so identical
# requests give identical macro_ids and the invocations find their tools.
# The inspected server ran inside manglecp inspect (the embedded default
# domain); replay against `manglecp serve --addr 127.0.0.1:8080`.
#
# BASE is the server's HTTP address; set MANGLECP_AUTH_TOKEN when it requires
# authentication, and CONFIRMATION_TOKEN for invocations that need confirmation.
DEFAULT_BASE='http://127.0.0.1:8080'
BASE="${BASE:-$DEFAULT_BASE}"
post() { # post URL ENVELOPE
	printf '%s\n' "$2" | curl -sS -H 'Content-Type: application/json' ${MANGLECP_AUTH_TOKEN:+-H "Authorization: Bearer $MANGLECP_AUTH_TOKEN"} --data-binary @- "$1"
	echo
}

# 1. evaluate diagnose_error -> ok: diagnose_error: 3 macro-tools
post "$BASE"'/manglecp/evaluate' \
	'{"type":"intent_request","id":"replay-1","manglecp":"2026-02-draft","payload":{"intent":{"name":"diagnose_error","params":{"depth":2}},"facts":[{"pred":"current_url","args":["https://app.example.com/it'\''s"]},{"pred":"net_response","args":["s1","r42",404,1771510199500]}],"eval_time":"2026-02-19T14:30:05Z","constraints":{"max_tokens_budget":500},"options":{"include_proof_hints":true,"disclosure_preference":"full","x-include_rule_coverage":true}}}'

# 2. invoke diagnose_causal_chain-1 -> error schema_validation_failed (HTTP 400): diagnose_causal_chain-1: schema_validation_failed
post "$BASE"'/manglecp/invoke' \
	'{"type":"invoke_request","id":"replay-2","manglecp":"2026-02-draft","payload":{"macro_id":"diagnose_causal_chain-1","args":{"request_id":"nope"}}}'

# 3. invoke write_diagnosis_report-2 -> ok: write_diagnosis_report-2: Wrote the report
# Confirmed by the user: needs a fresh CONFIRMATION_TOKEN for this macro_id
# (`manglecp invoke --confirm` signs one with the server's confirmation key).
post "$BASE"'/manglecp/invoke' \
	'{"type":"invoke_request","id":"replay-3","manglecp":"2026-02-draft","payload":{"macro_id":"write_diagnosis_report-2","args":{"request_id":"r42","title":"it'\''s $HOME `id` \\ \"quoted\"\nsecond line"},"confirmation_token":"'"${CONFIRMATION_TOKEN}"'"}}'

# 4. manifest -> ok: manifest refreshed
curl -sS ${MANGLECP_AUTH_TOKEN:+-H "Authorization: Bearer $MANGLECP_AUTH_TOKEN"} "$BASE"'/.well-known/manglecp/manifest.json'
echo
