#!/usr/bin/env bash
# Installs nginx from Debian when missing: TestNginxTrustedProxy
# (cmd/manglecp) runs deploy/nginx.conf in a real nginx, and
# scripts/scaleout.sh puts one in front of local replicas. Quiet when it
# exists. The tests start their own nginx as the current user.
set -euo pipefail
if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "scripts/deps/nginx.sh: nginx missing; run as root or install: apt-get install nginx" >&2
	exit 1
fi
echo "installing nginx"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends nginx >/dev/null
# The Debian package starts a service; the tests start their own.
if command -v systemctl >/dev/null 2>&1; then systemctl disable --now nginx >/dev/null 2>&1 || true; fi
service nginx stop >/dev/null 2>&1 || true
