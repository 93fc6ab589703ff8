#!/usr/bin/env bash
# Chromium for the browser domain's tests (domains/browser, domains/browser/chrome)
# and scripts/checks/browser.sh. Installs Debian's `chromium` with apt-get
# when no Chromium is on PATH. Idempotent; quiet when nothing is needed.
set -euo pipefail
if [ "${MANGLECP_NO_BROWSER:-}" = 1 ]; then exit 0; fi
for name in chromium chromium-browser google-chrome google-chrome-stable headless-shell; do
	if command -v "$name" >/dev/null 2>&1; then
		exit 0
	fi
done
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=sudo
	else
		echo "scripts/deps/chromium.sh: no Chromium on PATH and not root: install the 'chromium' package" >&2
		exit 1
	fi
else
	SUDO=
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "scripts/deps/chromium.sh: no Chromium on PATH and no apt-get: install Chromium (or set MANGLECP_NO_BROWSER=1 to skip the browser tests locally)" >&2
	exit 1
fi
echo "installing chromium (apt-get)"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null
command -v chromium >/dev/null
