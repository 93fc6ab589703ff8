#!/usr/bin/env bash
# Programs the tests use that a minimal Debian may lack: curl (the README
# walkthrough test runs the README's curl commands as written).
set -euo pipefail
missing=()
command -v curl >/dev/null || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
