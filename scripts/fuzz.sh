#!/usr/bin/env bash
# Runs every Go fuzz target of the module, one after the other, and prints
# the executions each one reached (docs/RELIABILITY.md records them).
#
# Usage: scripts/fuzz.sh [duration-per-target] [target-regexp]
#   scripts/fuzz.sh               # 10m per target
#   scripts/fuzz.sh 30s           # a quick pass
#   scripts/fuzz.sh 1h FuzzHandle # one target, long
# Environment: FUZZ_MINIMIZE (default 10s) is -fuzzminimizetime; the Go
# default of 60s would eat short runs, since new inputs are minimized too.
#
# Each target runs as
#   go test -run '^$' -fuzz '^FuzzName$' -fuzztime D -fuzzminimizetime M ./pkg
#
# When a target finds a failing input, Go writes it to
# PKG/testdata/fuzz/FuzzName/<hash>. Keep that file: commit it (renamed to
# say what it is, if you like) as a regression seed, so that plain
# `go test ./...` replays it forever; then fix the code (or, if the bug is
# the lead's to fix, add a t.Skip("BUG: ...") test naming it) until it
# passes. Inputs that merely add coverage stay in Go's cache
# ($(go env GOCACHE)/fuzz) and are reused by the next run.
#
# Go 1.26's fuzz coordinator can fail a target with a bare "context
# deadline exceeded" when -fuzztime ends while a worker is busy (golang/go
# issue 75804, fixed in Go 1.27). This script reports such a run as a
# flake when no failing input was written, and fails only on real findings.
set -uo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10m}
filter=${2:-.}
minimize=${FUZZ_MINIMIZE:-10s}

# Discover the targets: `go test -list` prints a package's matching names
# before its "ok" line.
targets=()
names=()
while read -r line; do
  case "$line" in
    Fuzz*) names+=("$line") ;;
    ok*)
      pkg=$(awk '{print $2}' <<<"$line")
      for n in "${names[@]}"; do
        if grep -Eq -- "$filter" <<<"$n"; then targets+=("$pkg $n"); fi
      done
      names=()
      ;;
    FAIL* | "?"*) names=() ;; # a package that does not build: skipped
  esac
done < <(go test -list '^Fuzz' ./... 2>/dev/null)
if [ ${#targets[@]} -eq 0 ]; then
  echo "no fuzz target matches $filter" >&2
  exit 2
fi

module=$(go list -m)
status=0
summary=()
printf '%s fuzz targets, %s each (minimize %s), %s cores\n' "${#targets[@]}" "$duration" "$minimize" "$(nproc 2>/dev/null || echo '?')"
for t in "${targets[@]}"; do
  read -r pkg name <<<"$t"
  dir=${pkg#"$module"}
  dir=.${dir}
  corpus="$dir/testdata/fuzz/$name"
  before=$(ls "$corpus" 2>/dev/null | sort)
  echo "== $name ($dir)"
  log=$(mktemp)
  start=$(date +%s)
  # Show the verdict, failing inputs and one progress line a minute.
  go test -run '^$' -fuzz "^${name}\$" -fuzztime "$duration" -fuzzminimizetime "$minimize" "$dir" 2>&1 |
    tee "$log" | grep --line-buffered -E '^(---|FAIL|ok|PASS)|Failing input|go test -run|elapsed: [0-9]+m0s'
  rc=${PIPESTATUS[0]}
  secs=$(( $(date +%s) - start ))
  execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  after=$(ls "$corpus" 2>/dev/null | sort)
  new=$(comm -13 <(echo "$before") <(echo "$after") | grep -v '^$' || true)
  if [ "$rc" -eq 0 ]; then
    result=ok
  elif [ -z "$new" ] && grep -q 'context deadline exceeded' "$log"; then
    result="ok (coordinator deadline flake, no failing input)"
  else
    result=FAIL
    status=1
    [ -n "$new" ] && echo "   failing input kept as a regression seed: $corpus/$new"
  fi
  summary+=("$(printf '%-26s %-45s %8s s %12s execs  %s' "$name" "$dir" "$secs" "${execs:-0}" "$result")")
  rm -f "$log"
done
echo
echo "== summary"
printf '%s\n' "${summary[@]}"
exit $status
