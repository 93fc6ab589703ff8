#!/usr/bin/env bash
# bench-compare.sh (stable name): MangleCP evaluate against an MCP server's
# tools/list, side by side on one pinned core.
#
# Builds `manglecp` and scripts/bench/mcptools (a minimal server of the
# official MCP Go SDK listing 14 tools shaped like the reference filesystem
# server's), runs each server alone on core $SERVER_CPU with GOMAXPROCS=1,
# drives it with wrk on core $CLIENT_CPU, interleaves the systems, repeats
# the round $ROUNDS times and prints one table of medians, with the CPU
# time the server used per request and the ratio to the SDK's typed
# tools/list. Only the ratios hold: the machine is shared and noisy.
#
# Usage: scripts/bench-compare.sh [seconds-per-run]      (default 20)
# Environment: ROUNDS (3), CONNS ("16 64"), SERVER_CPU (1), CLIENT_CPU (0),
# MANGLECP_CONFIG (a --config file for the server; default none),
# BASELINE_BIN (another manglecp binary, e.g. built from an older commit:
# adds its 20-fact row to every round, for before/after in one run).
# Needs wrk and taskset (Debian: wrk, util-linux); installs wrk if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
rounds=${ROUNDS:-3}
conns=${CONNS:-"16 64"}
scpu=${SERVER_CPU:-1}
ccpu=${CLIENT_CPU:-0}
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }

bin=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$bin"' EXIT
go build -o "$bin/manglecp" ./cmd/manglecp
go build -o "$bin/mcptools" ./scripts/bench/mcptools
results="$bin/results"
: >"$results"

port=19180
# run NAME C URL BODY CMD...: start the server pinned, wait, wrk it, stop it.
run() {
	local name=$1 c=$2 url=$3 body=$4
	shift 4
	port=$((port + 1))
	local u=${url//PORT/$port}
	GOMAXPROCS=1 taskset -c "$scpu" "$@" --addr "127.0.0.1:$port" >/dev/null 2>&1 &
	local pid=$!
	for _ in $(seq 100); do
		curl -s -o /dev/null -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
			--data-binary @"$body" "$u" && break
		sleep 0.1
	done
	# warm up, then measure CPU over the timed run only
	BODY=$body taskset -c "$ccpu" wrk -t1 -c"$c" -d2s -s scripts/bench/post.lua "$u" >/dev/null 2>&1 || true
	local before after
	before=$(awk '{print $14+$15}' /proc/$pid/stat)
	local out
	out=$(BODY=$body taskset -c "$ccpu" wrk -t1 -c"$c" -d"${secs}s" --timeout 10s -s scripts/bench/post.lua "$u" | grep '^RESULT')
	after=$(awk '{print $14+$15}' /proc/$pid/stat)
	kill $pid; wait $pid 2>/dev/null || true
	echo "$name|$c|$out|ticks=$((after - before))" >>"$results"
	echo "  $name c=$c: $out cpu_ticks=$((after - before))" >&2
}

mcp_cmd() { echo "$bin/mcptools -schemas $1"; }
for r in $(seq "$rounds"); do
	echo "round $r of $rounds" >&2
	for c in $conns; do
		extra=()
		[ -n "${MANGLECP_CONFIG:-}" ] && extra=(--config "$MANGLECP_CONFIG")
		run "manglecp evaluate, 20 facts" "$c" "http://127.0.0.1:PORT/manglecp/evaluate" scripts/bench/evaluate-20.json "$bin/manglecp" serve "${extra[@]}"
		if [ -n "${BASELINE_BIN:-}" ]; then
			run "manglecp evaluate, 20 facts (baseline binary)" "$c" "http://127.0.0.1:PORT/manglecp/evaluate" scripts/bench/evaluate-20.json "$BASELINE_BIN" serve "${extra[@]}"
		fi
		run "manglecp evaluate, README's 4 facts" "$c" "http://127.0.0.1:PORT/manglecp/evaluate" scripts/bench/evaluate-4.json "$bin/manglecp" serve "${extra[@]}"
		run "MCP go-sdk tools/list, typed schemas" "$c" "http://127.0.0.1:PORT/" scripts/bench/tools-list.json $(mcp_cmd typed)
		run "MCP go-sdk tools/list, raw schemas" "$c" "http://127.0.0.1:PORT/" scripts/bench/tools-list.json $(mcp_cmd raw)
	done
done

python3 - "$results" "$(getconf CLK_TCK)" <<'PY'
import sys, statistics, re, collections
path, hz = sys.argv[1], int(sys.argv[2])
rows = collections.defaultdict(list)
for line in open(path):
    name, c, res, ticks = line.strip().split("|")
    kv = dict(re.findall(r"(\w+)=(\d+)", res + " " + ticks))
    n = int(kv["requests"]); d = int(kv["duration_us"]) / 1e6
    rows[(name, int(c))].append(dict(rps=n / d, p50=int(kv["p50_us"]) / 1000, p99=int(kv["p99_us"]) / 1000,
        bad=int(kv["non2xx"]), err=int(kv["errors"]), cpu=int(kv["ticks"]) / hz * 1000 / max(n, 1)))
print("| system | c | req/s (median) | p50 ms | p99 ms | p99/p50 | CPU ms/request | non-200 | socket errors | vs typed tools/list |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (name, c), runs in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    med = lambda k: statistics.median(r[k] for r in runs)
    base = rows.get(("MCP go-sdk tools/list, typed schemas", c))
    ratio = med("rps") / statistics.median(r["rps"] for r in base) if base else float("nan")
    print(f"| {name} | {c} | {med('rps'):,.0f} | {med('p50'):.1f} | {med('p99'):.1f} | {med('p99')/max(med('p50'),0.001):.1f} | {med('cpu'):.2f} | {sum(r['bad'] for r in runs)} | {sum(r['err'] for r in runs)} | {ratio:.2f} |")
PY
