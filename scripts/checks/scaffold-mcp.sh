#!/usr/bin/env bash
# Any domain in any MCP host (issue 39): a domain scaffolded by `manglecp
# new domain` into a directory outside this repository, built with no
# go.work, serves MCP over stdio (`BIN mcp`, docs/write-a-domain.md "In an
# MCP host"). The MCP Inspector CLI (one call per process) lists its tools
# and calls the intent tool; the MCP TypeScript SDK's client, in one
# session, calls the intent, show_logs, and rollback after accepting the
# elicitation (scripts/checks/scaffold-mcp.mjs). Any break exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
# shellcheck source=scripts/checks/lib/inspector.sh
. scripts/checks/lib/inspector.sh # insp, inspector, check
go build -o "$work/manglecp" ./cmd/manglecp
(cd "$work" && ./manglecp new domain incidents >/dev/null)
(cd "$work/incidents" && GOWORK=off GOFLAGS=-mod=mod go build -o "$work/incidents-bin" .)
bin=$work/incidents-bin
# After the builds (HOME holds the Go caches): the Inspector's files.
export HOME=$work XDG_CONFIG_HOME=$work/config MCP_CATALOG_PATH=$work/catalog.json MCP_CLIENT_CONFIG_PATH=$work/client.json

out=$(inspector 0 "$bin" mcp --method tools/list)
check "Inspector: tools/list of the scaffold is triage and invoke_macro_tool" "$out" \
	"d.result.tools.map(t => t.name).sort().join() === 'invoke_macro_tool,triage'"
out=$(inspector 0 "$bin" mcp --method tools/call --tool-name triage --tool-args-json '{"facts": [["incident", "INC-1", "checkout"]]}')
check "Inspector: triage selects show_logs and rollback" "$out" \
	"d.result.content[0].text.includes('show_logs(') && d.result.content[0].text.includes('rollback(')"
node scripts/checks/scaffold-mcp.mjs "$bin" || fails=$((fails + 1))

if [ "$fails" -ne 0 ]; then
	echo "scaffold-mcp.sh: $fails failures" >&2
	exit 1
fi
echo "scaffold-mcp.sh: all checks passed"
