#!/usr/bin/env bash
# CPU attack of issue 9 item 7: starts a server with two identities, sends
# one 648 KB request whose rules join its facts quadratically but derive
# almost nothing, then floods the server with such requests from N clients
# of the identity "heavy" while the identity "light" sends a small request
# every 250 ms. Prints the server's CPU-seconds per heavy request and the
# light client's latency. Figures: docs/RELIABILITY.md, "Hardening: CPU and
# reload".
#
# Usage: scripts/attack-cpu.sh [clients] [duration]   (default 8 20s)
# MANGLECP=/path/to/manglecp measures another build (e.g. an older commit);
# MANGLECP_CONFIG_EXTRA='"limits": {"max_evaluation_work": 1000000000000},'
# adds settings to the server's configuration.
set -euo pipefail
cd "$(dirname "$0")/.."
clients=${1:-8}
duration=${2:-20s}
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
bin=${MANGLECP:-}
if [ -z "$bin" ]; then
  go build -o "$tmp/manglecp" ./cmd/manglecp
  bin=$tmp/manglecp
fi
go build -o "$tmp/attack-cpu" ./scripts/attack-cpu
heavy=heavy-token-0123456789abcdef
light=light-token-0123456789abcdef
cat > "$tmp/config.json" <<JSON
{ ${MANGLECP_CONFIG_EXTRA:-}
  "identities": [
    {"name": "heavy", "token": "$heavy", "permissions": ["*"]},
    {"name": "light", "token": "$light", "permissions": ["*"]}
  ]
}
JSON
port=$(( 20000 + RANDOM % 20000 ))
"$bin" serve --addr "127.0.0.1:$port" --config "$tmp/config.json" 2>"$tmp/server.log" &
pid=$!
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/.well-known/manglecp/manifest.json" >/dev/null && break
  sleep 0.1
done
echo "server pid $pid on 127.0.0.1:$port, $(nproc) CPUs"
"$tmp/attack-cpu" -url "http://127.0.0.1:$port/manglecp/evaluate" -pid "$pid" -clients "$clients" -duration "$duration" \
  -heavy-token "$heavy" -light-token "$light"
