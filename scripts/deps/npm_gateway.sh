#!/usr/bin/env bash
# Installs the MCP servers the gateway's tests use as upstreams beside
# those of npm.sh (the "everything" reference server,
# @modelcontextprotocol/server-everything) into .cache/npm-gateway of this
# clone, exactly as domains/gateway/testdata/npm/package-lock.json pins
# them. Quiet when nothing is needed.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=domains/gateway/testdata/npm
dir=.cache/npm-gateway
# npm.sh installs Node.js and npm when they are missing (and its own
# packages, which the gateway's tests also use); run it first, whatever
# order the shell lists the scripts in.
scripts/deps/npm.sh
if [ -d "$dir/node_modules" ] && cmp -s "$src/package-lock.json" "$dir/package-lock.json"; then
	exit 0
fi
echo "npm_gateway.sh: installing $src/package-lock.json into $dir"
mkdir -p "$dir"
cp "$src/package.json" "$src/package-lock.json" "$dir/"
# No install scripts: nothing here needs one.
(cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
