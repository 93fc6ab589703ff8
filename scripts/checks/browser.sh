#!/usr/bin/env bash
# End-to-end check of the browser domain with the real binary: `manglecp serve`
# (the README's serve command, on a free port) with Chromium, then the CLI opens
# domains/browser/testdata/orders.html, diagnoses its failed request and clicks its
# button (the job of docs/browser.md). Needs Chromium (scripts/deps/chromium.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${MANGLECP_NO_BROWSER:-}" = 1 ]; then
	echo "MANGLECP_NO_BROWSER=1: skipping the browser check"
	exit 0
fi
bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/manglecp" ./cmd/manglecp
go run ./scripts/checks/browserjob "$bin/manglecp"
