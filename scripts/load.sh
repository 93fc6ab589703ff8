#!/usr/bin/env bash
# Runs the load harness (cmd/manglecp-load) and prints the figures recorded
# in docs/BENCHMARKS.md. Usage: scripts/load.sh [duration-of-the-long-runs]
# The long runs take 60 s each by default; the transport comparison 10 s per cell.
set -euo pipefail
cd "$(dirname "$0")/.."
long=${1:-60s}
go build -o /tmp/manglecp-load ./cmd/manglecp-load
echo "== transports: valid evaluations, 1 and 16 clients =="
for t in http ws stdio; do
  for c in 1 16; do
    pipeline=1
    [ "$t" = ws ] && pipeline=4
    /tmp/manglecp-load -transport "$t" -c "$c" -pipeline "$pipeline" -d 10s -mix evaluate | head -2
  done
done
echo "== mixed traffic, 64 clients, $long =="
for t in http ws; do
  /tmp/manglecp-load -transport "$t" -c 64 -d "$long" -mix mixed
done
