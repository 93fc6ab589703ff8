#!/usr/bin/env bash
# Installs redis-server (store/redis tests, scripts/scaleout.sh) and nginx
# (scripts/scaleout.sh) from Debian when missing. Quiet when both exist.
set -euo pipefail
missing=()
command -v redis-server >/dev/null 2>&1 || command -v valkey-server >/dev/null 2>&1 || missing+=(redis-server)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "scripts/deps/redis.sh: ${missing[*]} missing; run as root or install: apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The Debian packages start services; the tests start their own.
if command -v systemctl >/dev/null 2>&1; then systemctl disable --now redis-server nginx >/dev/null 2>&1 || true; fi
service redis-server stop >/dev/null 2>&1 || true
service nginx stop >/dev/null 2>&1 || true
