#!/usr/bin/env bash
# Hostile-client attacks of issue 9 against locally started servers (loopback
# only, bounded in time), with --auth-token set. Prints the figures recorded in
# docs/RELIABILITY.md ("Hostile clients"):
#   1. 20 HTTP connections each sending a 4 MB version string, no credentials
#   2. 4 WebSocket sessions that never read, sending 4 MB frames, no credentials
#   3. 4 authenticated WebSocket sessions that never read, sending small requests
#   4. SIGTERM under load: 16 HTTP + 8 WebSocket clients; answered/unanswered
#      requests, sessions closed with a close frame, time to exit
# Each attack gets a fresh server, so "peak RSS" (VmHWM) is that attack's.
# Usage: scripts/attack.sh [seconds-per-attack [attacks]]   (default 10, "1 2 3 4")
# MANGLECP_BIN=path runs another build of manglecp (e.g. an older one).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
only=${2:-1 2 3 4}
run() { [[ " $only " == *" $1 "* ]]; }
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
bin=${MANGLECP_BIN:-$tmp/manglecp}
[ -n "${MANGLECP_BIN:-}" ] || go build -o "$bin" ./cmd/manglecp
go build -o "$tmp/attack" ./cmd/manglecp-attack
token=attack-token-0123456789

# start_server LOGFILE: starts manglecp on a free loopback port; sets pid and url.
start_server() {
  local log=$1
  "$bin" serve --addr 127.0.0.1:0 --auth-token "$token" --grace 10s 2>"$log" &
  pid=$!
  for _ in $(seq 1 200); do
    url=$(grep -o 'addr=127.0.0.1:[0-9]*' "$log" | head -1 | sed 's/addr=/http:\/\//') || true
    if [ -n "$url" ] && curl -sf -o /dev/null "$url/.well-known/manglecp/manifest.json" 2>/dev/null; then
      return 0
    fi
    sleep 0.05
  done
  echo "server did not start:" >&2
  cat "$log" >&2
  exit 1
}

stop_server() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

rss() { grep "^$2:" "/proc/$1/status" | awk '{print $2, $3}'; }

echo "== manglecp $("$bin" version 2>/dev/null || true)"
run 1 && {
echo "== 1. HTTP: 20 connections, 4 MB version string, no credentials, ${secs}s =="
start_server "$tmp/s1.log"
echo "  server RSS at start: $(rss "$pid" VmRSS)"
"$tmp/attack" -mode http -url "$url" -c 20 -size $((4 << 20)) -d "${secs}s" -pid "$pid"
stop_server

}
run 2 && {
echo "== 2. WebSocket: 4 sessions that never read, 4 MB frames, no credentials, ${secs}s =="
start_server "$tmp/s2.log"
echo "  server RSS at start: $(rss "$pid" VmRSS)"
"$tmp/attack" -mode ws -url "$url" -c 4 -size $((4 << 20)) -d "${secs}s" -pid "$pid"
stop_server

}
run 3 && {
echo "== 3. WebSocket: 4 authenticated sessions that never read, small requests, ${secs}s =="
start_server "$tmp/s3.log"
echo "  server RSS at start: $(rss "$pid" VmRSS)"
"$tmp/attack" -mode ws-auth -url "$url" -token "$token" -c 4 -d "${secs}s" -pid "$pid"
stop_server

}
run 4 && {
echo "== 4. SIGTERM under load: 16 HTTP + 8 WebSocket clients, grace 10s =="
start_server "$tmp/s4.log"
"$tmp/attack" -mode drain -url "$url" -token "$token" -c 16 -ws 8 -term-after 3s -d 30s -pid "$pid"
wait "$pid" 2>/dev/null || true
grep -E 'draining|drained|grace period over' "$tmp/s4.log" | sed 's/^/  server log: /'
}
