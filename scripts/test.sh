#!/usr/bin/env bash
# The project's test command (the README's, and CI's through .ci/run).
#
# 1. Installs what tests need and the machine lacks: every scripts/deps/*.sh
#    runs in name order (each checks first and installs only what is
#    missing: Debian packages with apt-get as root, npm packages into
#    .cache/npm of this clone).
# 2. Runs `go test ./...` with MANGLECP_TEST_REQUIRE=1, so a test whose
#    program is missing fails instead of skipping (internal/testenv), and
#    with an explicit -timeout per test binary ($MANGLECP_TEST_TIMEOUT,
#    default 20m; a -timeout among the arguments wins).
# 3. Runs every scripts/checks/*.sh (end-to-end checks with real
#    third-party programs, such as the MCP Inspector).
#
# Every stage runs even when an earlier one failed, so one run tells a
# flaky test from a real break: the end prints each stage with its result
# and time, the failing packages and tests of `go test`, and exits 1 if
# any stage failed.
#
# Usage: scripts/test.sh [go test flags and packages]   (default ./...)
set -uo pipefail
cd "$(dirname "$0")/.."
export MANGLECP_TEST_REQUIRE=1

summary=()
failed=()
log=$(mktemp -t manglecp-test.XXXXXX)
trap 'rm -f "$log"' EXIT

# stage NAME CMD...: runs CMD, records its result and wall time.
stage() {
	local name=$1
	shift
	echo "== $name"
	local start=$SECONDS
	"$@"
	local rc=$?
	local took=$((SECONDS - start))
	if [ "$rc" -eq 0 ]; then
		summary+=("ok    $name (${took}s)")
	else
		summary+=("FAIL  $name (${took}s, exit $rc)")
		failed+=("$name")
	fi
	return 0
}

for dep in scripts/deps/*.sh; do
	[ -e "$dep" ] || continue
	stage "$dep" bash "$dep"
done

if [ $# -eq 0 ]; then set -- ./...; fi
timeout=(-timeout "${MANGLECP_TEST_TIMEOUT:-20m}")
for arg in "$@"; do
	case "$arg" in -timeout | -timeout=* | --timeout | --timeout=*) timeout=() ;; esac
done
gotest() {
	go test "${timeout[@]}" "$@" 2>&1 | tee "$log"
}
stage "go test" gotest "$@"

for check in scripts/checks/*.sh; do
	[ -e "$check" ] || continue
	stage "$check" bash "$check"
done

echo
echo "== summary"
printf '%s\n' "${summary[@]}"
if grep -qE '^ok\s' "$log"; then
	echo
	echo "slowest packages:"
	grep -E '^ok\s' "$log" | sort -t$'\t' -k3 -rn | head -5 | sed 's/^/  /'
fi
if grep -qE '^(FAIL\s|--- FAIL|panic: )' "$log"; then
	echo
	echo "go test failures:"
	grep -E '^(FAIL\s|\s*--- FAIL|panic: )' "$log" | sed 's/^/  /'
fi
if [ ${#failed[@]} -gt 0 ]; then
	echo
	echo "FAILED: ${#failed[@]} stage(s): ${failed[*]}"
	exit 1
fi
echo "all stages passed"
