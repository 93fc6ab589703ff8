#!/usr/bin/env bash
# What the inspector's tests need: Chromium (inspector/browser_test.go drives
# the page in headless Chromium) and curl (inspector/replay_test.go replays an
# exported curl script). Installs only what is missing, with apt-get as root.
set -euo pipefail
missing=()
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
command -v curl >/dev/null 2>&1 || missing+=(curl)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "scripts/deps/inspector.sh: missing ${missing[*]}; run as root or install them" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" fonts-dejavu-core
