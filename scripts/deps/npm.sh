#!/usr/bin/env bash
# Installs the npm packages that the MCP checks and the token tool need
# into .cache/npm of this clone, exactly as tools/tokens/package-lock.json
# pins them: the MCP Inspector (its CLI is the third-party host of
# scripts/checks/mcp-inspector.sh), the MCP TypeScript SDK and
# gpt-tokenizer (tools/tokens), and the MCP servers docs/TOKENS.md
# measures (@playwright/mcp, chrome-devtools-mcp,
# @modelcontextprotocol/server-filesystem). Quiet when nothing is needed.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=tools/tokens
dir=.cache/npm
if ! command -v npm >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "npm.sh: installing nodejs and npm with apt-get"
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
	else
		echo "npm.sh: npm is missing: install Node.js 20 or newer with npm" >&2
		exit 1
	fi
fi
if [ -d "$dir/node_modules" ] && cmp -s "$src/package-lock.json" "$dir/package-lock.json"; then
	exit 0
fi
echo "npm.sh: installing $src/package-lock.json into $dir"
mkdir -p "$dir"
cp "$src/package.json" "$src/package-lock.json" "$dir/"
# No install scripts: nothing here needs one (no browser downloads).
(cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
