#!/usr/bin/env bash
# The project's test command (the README's, and CI's through .ci/run).
#
# 1. Installs what tests need and the machine lacks: every scripts/deps/*.sh
#    runs in name order (each checks first and installs only what is
#    missing: Debian packages with apt-get as root, npm packages into
#    .cache/npm of this clone).
# 2. Runs `go test ./...` with MANGLECP_TEST_REQUIRE=1, so a test whose
#    program is missing fails instead of skipping (internal/testenv).
# 3. Runs every scripts/checks/*.sh (end-to-end checks with real
#    third-party programs, such as the MCP Inspector); any failure fails.
#
# Usage: scripts/test.sh [go test flags and packages]   (default ./...)
set -euo pipefail
cd "$(dirname "$0")/.."
export MANGLECP_TEST_REQUIRE=1
for dep in scripts/deps/*.sh; do
	[ -e "$dep" ] || continue
	echo "== $dep"
	bash "$dep"
done
if [ $# -eq 0 ]; then set -- ./...; fi
go test "$@"
for check in scripts/checks/*.sh; do
	[ -e "$check" ] || continue
	echo "== $check"
	bash "$check"
done
