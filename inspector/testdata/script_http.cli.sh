#!/bin/sh
# A MangleCP session exported by manglecp inspect at 2026-11-22T12:00:00Z.
# Server: manglecp-go 0.1.0, domain browser_diagnostics, protocol 2026-02-draft.
# Replays 4 request(s) with the manglecp command, in order.
# Evaluations pin eval_time to the time the server used, so identical
# requests give identical macro_ids and the invocations find their tools.
#
# TARGET is the server: a URL or "stdio:COMMAND ARGS..." (a stdio server starts
# afresh for each command, with an empty macro cache, so replay invocations
# against a URL). MANGLECP_AUTH_TOKEN is the credential, if one is needed;
# invocations with --confirm need MANGLECP_CONFIRMATION_KEY.
DEFAULT_TARGET='http://127.0.0.1:8080'
TARGET="${TARGET:-$DEFAULT_TARGET}"
MANGLECP="${MANGLECP:-manglecp}"

# 1. evaluate diagnose_error -> ok: diagnose_error: 3 macro-tools
# not expressible with manglecp eval (use the curl export): options.x-include_rule_coverage; constraints {"max_tokens_budget":500}
printf '%s\n' '[{"pred":"current_url","args":["https://app.example.com/it'\''s"]},{"pred":"net_response","args":["s1","r42",404,1771510199500]}]' |
	"$MANGLECP" eval "$TARGET" --intent 'diagnose_error' --params '{"depth":2}' --eval-time '2026-02-19T14:30:05Z' --disclosure 'full' --proof --json --facts -

# 2. invoke diagnose_causal_chain-1 -> error schema_validation_failed (HTTP 400): diagnose_causal_chain-1: schema_validation_failed
"$MANGLECP" invoke "$TARGET" --macro 'diagnose_causal_chain-1' --args '{"request_id":"nope"}' --json

# 3. invoke write_diagnosis_report-2 -> ok: write_diagnosis_report-2: Wrote the report
"$MANGLECP" invoke "$TARGET" --macro 'write_diagnosis_report-2' --args '{"request_id":"r42","title":"it'\''s $HOME `id` \\ \"quoted\"\nsecond line"}' --confirm --json

# 4. manifest -> ok: manifest refreshed
"$MANGLECP" manifest "$TARGET" --json
