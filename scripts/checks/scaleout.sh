#!/usr/bin/env bash
# End-to-end scale-out check: three replicas sharing Redis behind nginx,
# evaluate then invoke on another connection; zero macro_not_found and zero
# unexpected answers (a 10 s pass of scripts/scaleout.sh, which runs 60 s).
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION=${SCALEOUT_DURATION:-10s} CLIENTS=16 BASE_PORT=${SCALEOUT_BASE_PORT:-18180} scripts/scaleout.sh
