#!/usr/bin/env bash
# A release the world can use (CHANGELOG.md, "Releasing"): the commit a
# tag vX.Y.Z would name (HEAD) is served by a local module proxy directory
# (scripts/checks/modproxy, GOPROXY=file://...) exactly as proxy.golang.org
# would serve the tag, and, offline, `go install
# github.com/manglecp/manglecp/cmd/manglecp@vX.Y.Z` installs a manglecp
# that reports vX.Y.Z (from the Go build info, not "+devel"), whose
# `manglecp new domain` requires that release (no replace), and whose
# scaffold builds and passes its test against it. The version is
# SourceVersion (options.go), the newest section of CHANGELOG.md.
# Offline: modules come from the module cache; GOSUMDB=off because the
# checksum database is not reachable (the cache was verified when filled).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
version=v$(sed -n 's/^const SourceVersion = "\(.*\)"$/\1/p' options.go)
if [ "$version" = "v" ]; then
	echo "release.sh: no SourceVersion in options.go" >&2
	exit 1
fi
if ! grep -q "^## \[${version#v}\]" CHANGELOG.md; then
	echo "release.sh: CHANGELOG.md has no section ## [${version#v}] for SourceVersion $version" >&2
	exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go run ./scripts/checks/modproxy -version "$version" -out "$work/proxy" -repo "$root"
export GOPROXY=file://$work/proxy GOSUMDB=off GOFLAGS= GOWORK=off GOBIN=$work/bin GOTOOLCHAIN=local
(cd "$work" && go install "github.com/manglecp/manglecp/cmd/manglecp@$version")
got=$("$work/bin/manglecp" version)
case "$got" in
"manglecp ${version#v} "*) echo "ok   go install ...@$version: $got" ;;
*)
	echo "FAIL go install ...@$version reports \"$got\", want manglecp ${version#v}" >&2
	exit 1
	;;
esac
(cd "$work" && XDG_CONFIG_HOME=$work/config "$work/bin/manglecp" new domain incidents --dir "$work/incidents" >/dev/null)
if ! grep -qx "require github.com/manglecp/manglecp $version" "$work/incidents/go.mod" || grep -q replace "$work/incidents/go.mod"; then
	echo "FAIL the released manglecp's scaffold does not require $version alone:" >&2
	cat "$work/incidents/go.mod" >&2
	exit 1
fi
echo "ok   manglecp new domain requires github.com/manglecp/manglecp $version"
(cd "$work/incidents" && GOFLAGS=-mod=mod XDG_CONFIG_HOME=$work/config go test ./... >"$work/test.log" 2>&1) || {
	echo "FAIL the scaffold does not pass its test against $version:" >&2
	cat "$work/test.log" >&2
	exit 1
}
echo "ok   the scaffold passes its test against $version"
echo "release.sh: all checks passed"
