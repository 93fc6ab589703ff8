#!/usr/bin/env bash
# A real third-party MCP host drives `manglecp mcp`: the MCP Inspector CLI
# (@modelcontextprotocol/inspector --cli, installed by scripts/deps/npm.sh)
# lists the tools, calls an intent tool, a macro-tool (through
# invoke_macro_tool, and by name with --tools dynamic), checks the registry error of a bad call and that a
# tool requiring confirmation is refused (the CLI has no elicitation), over
# stdio (both MCP protocol eras), against a MangleCP TARGET over HTTP, and
# over streamable HTTP. Any break exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
fails=0
# shellcheck source=scripts/checks/lib/inspector.sh
. scripts/checks/lib/inspector.sh # insp, inspector, check
go build -o "$work/manglecp" ./cmd/manglecp
bin=$work/manglecp
export MCP_CATALOG_PATH=$work/catalog.json MCP_CLIENT_CONFIG_PATH=$work/client.json HOME=$work

cat >"$work/facts.json" <<'JSON'
[
  {"pred": "current_url", "args": ["https://app.example.com/dashboard"]},
  {"pred": "console_event", "args": ["s1", "error", "TypeError: Cannot read properties of null", 1771510200000]},
  {"pred": "net_request", "args": ["s1", "r42", "GET", "https://api.example.com/users", 1771510199000]},
  {"pred": "net_response", "args": ["s1", "r42", 404, 1771510199500]}
]
JSON
readme_facts='{"facts": [["current_url", "https://app.example.com/dashboard"], ["console_event", "s1", "error", "TypeError: Cannot read properties of null", 1771510200000], ["net_request", "s1", "r42", "GET", "https://api.example.com/users", 1771510199000], ["net_response", "s1", "r42", 404, 1771510199500]]}'

names='d.result.tools.map(t => t.name)'

# 1. The intent tools of the embedded default domain and invoke_macro_tool
#    (stdio, both eras): the list never changes.
out=$(inspector 0 --protocol-era legacy "$bin" mcp --method tools/list)
check "tools/list (MCP 2025-11-25): one tool per intent and invoke_macro_tool" "$out" \
	"['observe','diagnose_error','automate','invoke_macro_tool'].every(n => $names.includes(n))"
out=$(inspector 0 --protocol-era modern "$bin" mcp --method tools/list)
check "tools/list (MCP 2026-07-28): one tool per intent and invoke_macro_tool" "$out" \
	"['observe','diagnose_error','automate','invoke_macro_tool'].every(n => $names.includes(n))"

# 2. An intent tool with the README's facts selects the causal-chain tool.
out=$(inspector 0 "$bin" mcp --method tools/call --tool-name diagnose_error --tool-args-json "$readme_facts")
check "tools/call diagnose_error selects diagnose_causal_chain" "$out" \
	"d.result.content[0].text.includes('diagnose_causal_chain(request_id=\"r42\"')"

# 3. A macro-tool by its own name (--tools dynamic, MCP 2025-11-25): a
#    session that starts with the intent lists it.
out=$(inspector 0 --protocol-era legacy "$bin" mcp --tools dynamic --intent diagnose_error --facts "$work/facts.json" --method tools/list)
check "tools/list after the start intent lists the macro-tools (--tools dynamic)" "$out" \
	"$names.includes('diagnose_causal_chain') && d.result.tools.find(t => t.name === 'diagnose_causal_chain').annotations.readOnlyHint === true"
out=$(inspector 0 --protocol-era legacy "$bin" mcp --tools dynamic --intent diagnose_error --facts "$work/facts.json" --method tools/call --tool-name diagnose_causal_chain --tool-args-json '{"request_id": "r42"}')
check "tools/call diagnose_causal_chain (--tools dynamic) traces the request" "$out" \
	"!d.result.isError && d.result.content[0].text.includes('404')"

# 4. The default: invoke_macro_tool.
out=$(inspector 0 "$bin" mcp --intent diagnose_error --facts "$work/facts.json" --method tools/call --tool-name invoke_macro_tool --tool-args-json '{"tool": "diagnose_causal_chain", "arguments": {"request_id": "r42"}}')
check "invoke_macro_tool diagnose_causal_chain" "$out" "d.result.content[0].text.includes('404') && !d.result.isError"

# 5. Errors are registry errors in isError results (the Inspector exits 5):
#    one text item, the fields programs read in _meta["manglecp/error"].
out=$(inspector 5 "$bin" mcp --method tools/call --tool-name diagnose_error --tool-args-json '{"facts": [["no_such_predicate", 1]]}')
check "a bad fact is invalid_facts with violations" "$out" \
	"d.result.isError && !d.result.structuredContent && d.result.content.length === 1 && d.result._meta['manglecp/error'].code === 'invalid_facts' && d.result._meta['manglecp/error'].details.violations.length > 0 && 'retry_after_ms' in d.result._meta['manglecp/error']"

# 6. Never auto-confirm: the CLI cannot answer elicitation, so the report is refused.
out=$(inspector 5 "$bin" mcp --intent diagnose_error --facts "$work/facts.json" --method tools/call --tool-name invoke_macro_tool --tool-args-json '{"tool": "write_diagnosis_report", "arguments": {"request_id": "r42"}}')
check "write_diagnosis_report is refused without elicitation" "$out" \
	"d.result.isError && d.result._meta['manglecp/error'].code === 'x-bridge_confirmation_unavailable'"

# A free TCP port on the loopback interface.
freeport() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
waitport() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }

# 7. TARGET: a MangleCP server over HTTP.
port=$(freeport)
"$bin" serve --addr "127.0.0.1:$port" 2>"$work/serve.log" &
pids+=($!)
waitport "$port"
out=$(inspector 0 "$bin" mcp "http://127.0.0.1:$port" --method tools/call --tool-name diagnose_error --tool-args-json "$readme_facts")
check "manglecp mcp http://... (remote TARGET) evaluates" "$out" \
	"d.result.content[0].text.includes('diagnose_causal_chain(')"

# 8. MCP over streamable HTTP (manglecp mcp --http).
mport=$(freeport)
"$bin" mcp --http "127.0.0.1:$mport" --intent diagnose_error --facts "$work/facts.json" 2>"$work/mcp-http.log" &
pids+=($!)
waitport "$mport"
out=$(inspector 0 --transport http --server-url "http://127.0.0.1:$mport/mcp" --method tools/call --tool-name invoke_macro_tool --tool-args-json '{"tool": "diagnose_causal_chain", "arguments": {"request_id": "r42"}}')
check "manglecp mcp --http: streamable HTTP macro-tool call" "$out" "!d.result.isError && d.result.content[0].text.includes('404')"

if [ "$fails" -ne 0 ]; then
	echo "mcp-inspector.sh: $fails failures" >&2
	exit 1
fi
echo "mcp-inspector.sh: all checks passed"
