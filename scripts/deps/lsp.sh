#!/usr/bin/env bash
# Installs the language servers the code domain's tests run (domains/code,
# docs/code.md) into .cache of this clone:
#   - gopls (Go), built from the Go module proxy at the version pinned here,
#     into .cache/lsp/bin;
#   - pyright (Python), from npm exactly as domains/code/testdata/npm's
#     package-lock.json pins it, into .cache/npm-lsp.
# Quiet when nothing is needed.
set -euo pipefail
cd "$(dirname "$0")/../.."
gopls_version=v0.23.0
bin=.cache/lsp/bin
if ! [ -x "$bin/gopls" ] || ! grep -qx "$gopls_version" "$bin/gopls.version" 2>/dev/null; then
	echo "lsp.sh: installing gopls $gopls_version into $bin"
	mkdir -p "$bin"
	GOBIN="$PWD/$bin" GOFLAGS=-mod=mod go install "golang.org/x/tools/gopls@$gopls_version"
	echo "$gopls_version" >"$bin/gopls.version"
fi
# npm.sh installs Node.js and npm when they are missing; run it first,
# whatever order the shell lists the scripts in.
scripts/deps/npm.sh
src=domains/code/testdata/npm
dir=.cache/npm-lsp
if [ -d "$dir/node_modules" ] && cmp -s "$src/package-lock.json" "$dir/package-lock.json"; then
	exit 0
fi
echo "lsp.sh: installing $src/package-lock.json into $dir"
mkdir -p "$dir"
cp "$src/package.json" "$src/package-lock.json" "$dir/"
# No install scripts: pyright needs none.
(cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
