#!/usr/bin/env bash
# bench-http-kernel.sh: issue 16's target 3 in one command. How long a
# 10,000-fact evaluate takes end to end over HTTP against the in-process
# kernel on the same request (BenchmarkHTTPOverKernel: each iteration sends
# the request over a loopback listener, then runs only the kernel's
# evaluation of it, so both see the same machine), at the test default
# GOGC=100 and at GOGC=400, which `manglecp serve` sets.
#
# Builds the root package's test binary once (and BASELINE's, a commit to
# compare with, when set), runs the benchmark ROUNDS times per GOGC value,
# the binaries interleaved, and prints the medians over the rounds of: the
# ratio of the rounds' total times (wall-ratio), the median of each
# round's per-request ratios (median-ratio, which the few requests that a
# shared machine slows several-fold do not move) and the CPU ratio. Only
# ratios measured side by side hold: the machine is shared and noisy.
#
# Usage: scripts/bench-http-kernel.sh
# Environment: ROUNDS (8), ITERS (40 requests per round), FACTS (10000 or
# 1000), BASELINE (a git commit to compare with, built in a temporary
# worktree; it must have BenchmarkHTTPOverKernel, so 478a9e4 or later).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-8}
iters=${ITERS:-40}
facts=${FACTS:-10000}
dir=$(mktemp -d)
trap 'git worktree remove --force "$dir/baseline" 2>/dev/null || true; rm -rf "$dir"' EXIT

go test -c -o "$dir/current.test" .
bins=(current)
if [ -n "${BASELINE:-}" ]; then
	git worktree add -q --detach "$dir/baseline" "$BASELINE"
	(cd "$dir/baseline" && go test -c -o "$dir/baseline.test" .)
	bins=(baseline current)
fi

results="$dir/results"
for _ in $(seq "$rounds"); do
	for b in "${bins[@]}"; do
		for gogc in 100 400; do
			# cpu-ratio http-ms kernel-ms median-ratio wall-ratio, by name
			GOGC=$gogc "$dir/$b.test" -test.run '^$' -test.bench "HTTPOverKernel/facts=$facts\$" -test.benchtime "${iters}x" |
				awk -v b="$b" -v g="$gogc" '/^Benchmark/ { for (i = 3; i < NF; i += 2) m[$(i+1)] = $i
					print b, g, v(m["wall-ratio"]), v(m["median-ratio"]), v(m["cpu-ratio"]), v(m["http-ms"]), v(m["kernel-ms"]) }
					function v(x) { return x == "" ? "-" : x }' >>"$results"
		done
	done
done

# median and range of the numbers on stdin ("n/a" for none: a baseline
# from before the benchmark reported median-ratio).
median() { grep -E '^[0-9.]+$' | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2 }'; }
range() { grep -E '^[0-9.]+$' | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR == 0) printf "n/a"; else printf "%s-%s", lo, hi }'; }
printf '%s facts, %s rounds of %s requests; medians over the rounds [range]\n\n' "$facts" "$rounds" "$iters"
printf '| binary | GOGC | HTTP / kernel (wall) | median per-request ratio | CPU ratio | HTTP ms | kernel ms |\n'
printf '|---|---|---|---|---|---|---|\n'
for b in "${bins[@]}"; do
	for gogc in 100 400; do
		col() { awk -v b="$b" -v g="$gogc" -v c="$1" '$1 == b && $2 == g { print $c }' "$results"; }
		printf '| %s | %s | %s [%s] | %s [%s] | %s | %s | %s |\n' "$b" "$gogc" \
			"$(col 3 | median)" "$(col 3 | range)" "$(col 4 | median)" "$(col 4 | range)" \
			"$(col 5 | median)" "$(col 6 | median)" "$(col 7 | median)"
	done
done
