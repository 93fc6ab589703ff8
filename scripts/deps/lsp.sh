#!/usr/bin/env bash
# Installs the language servers the code domain's tests run (domains/code,
# docs/code.md) into .cache of this clone:
#   - gopls (Go), built from the Go module proxy at the version pinned here,
#     into .cache/lsp/bin;
#   - pyright (Python), from npm exactly as domains/code/testdata/npm's
#     package-lock.json pins it, into .cache/npm-lsp;
#   - python-lsp-server (Python, the code domain's other server) from
#     Debian: python3-pylsp, with python3-pylsp-rope (its organise-imports
#     code action and rope's rename) and python3-pyflakes (its diagnostics).
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
# pylsp runs on Debian's python3 (/usr/bin/python3), whatever python3 is
# first on PATH.
if ! [ -x /usr/bin/pylsp ] || ! /usr/bin/python3 -c 'import pylsp_rope, pyflakes' 2>/dev/null; then
	if [ "$(id -u)" != 0 ]; then
		echo "lsp.sh: python-lsp-server missing; run as root or install: apt-get install python3-pylsp python3-pylsp-rope python3-pyflakes" >&2
		exit 1
	fi
	echo "lsp.sh: installing python3-pylsp python3-pylsp-rope python3-pyflakes"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends python3-pylsp python3-pylsp-rope python3-pyflakes >/dev/null
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
