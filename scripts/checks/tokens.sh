#!/usr/bin/env bash
# Measures, side by side in one run, what a whole job costs a model
# (M1, M2, M3 of tools/tokens/jobs.mjs): each anchor (Playwright MCP on
# Debian's chromium, headless; the MCP filesystem server), started from
# .cache/npm (scripts/deps/npm.sh), and `manglecp mcp` driven through the
# same jobs (tools/tokens/jobs/*.json) with the calls a competent model
# makes; and the anchors' static tool lists. The browser jobs run five
# times interleaved: their wall time is the median. Fails when a job is not done
# or a total (or a turn's tool definitions) exceeds its gate; targets are
# printed as met or not. docs/TOKENS.md has the figures.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ ! -d .cache/npm/node_modules/gpt-tokenizer ]; then
	echo "tokens.sh: the npm packages are not installed; run scripts/deps/npm.sh" >&2
	exit 1
fi
# The harness's own checks (the honesty of scripted calls, the counts).
node --test tools/tokens/lib.test.mjs >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/manglecp" ./cmd/manglecp
chromium="${CHROMIUM:-$(command -v chromium || command -v chromium-browser || echo /usr/bin/chromium)}"
# Every job but the browser jobs of issue 28 once; those five (each beside
# Playwright MCP) five times interleaved, for the median wall time.
others=()
for f in tools/tokens/jobs/*.json; do
	case "$(basename "$f")" in browser-*) ;; *) others+=("$f") ;; esac
done
node tools/tokens/measure.mjs --manglecp "$work/manglecp" --chromium "$chromium" --check "${others[@]}"
node tools/tokens/measure.mjs --manglecp "$work/manglecp" --chromium "$chromium" --check --repeat 5 tools/tokens/jobs/browser-*.json
