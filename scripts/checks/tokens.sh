#!/usr/bin/env bash
# Measures, side by side in one run, the whole-job cost (M1, M2, M3 of
# tools/tokens/jobs.mjs) of Playwright MCP (Debian chromium, headless) and
# the MCP filesystem server against `manglecp mcp` through the same jobs
# (tools/tokens/jobs/*.json), and the o200k tokens of the tool
# definitions of Playwright MCP, chrome-devtools-mcp and the MCP filesystem
# server (started from .cache/npm, installed by scripts/deps/npm.sh) and of
# `manglecp mcp` at every turn of each tools/tokens/scenarios/*.json (the
# browser domain's job with a real Chromium, the workspace domain's file
# jobs), and fails when a job is not done, a whole-job total regresses past
# its gate, or a scenario's job does not succeed or a turn exceeds one of
# its gates (the browser domain: a tenth of Playwright MCP's, every
# turn; the workspace: a tenth of the filesystem server's whole list, every
# turn, issue 12). Targets that are not gates are
# printed as met or not, turn by turn. docs/TOKENS.md has the figures.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ ! -d .cache/npm/node_modules/gpt-tokenizer ]; then
	echo "tokens.sh: the npm packages are not installed; run scripts/deps/npm.sh" >&2
	exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/manglecp" ./cmd/manglecp
node tools/tokens/measure.mjs --manglecp "$work/manglecp" --chromium "${CHROMIUM:-$(command -v chromium || command -v chromium-browser || echo /usr/bin/chromium)}" --check
