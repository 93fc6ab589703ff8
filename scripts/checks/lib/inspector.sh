# Sourced by the checks that drive an MCP server with the MCP Inspector
# CLI (mcp-inspector.sh, scaffold-mcp.sh); not a check itself. The caller
# sets root (the repository) and work (its temporary directory, holding
# the Inspector's stderr) and "fails=0"; every failure adds one to fails.

# insp is the Inspector CLI (installed by scripts/deps/npm.sh).
insp=$root/.cache/npm/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js
if [ ! -f "$insp" ]; then
	echo "$(basename "$0"): the MCP Inspector is not installed; run scripts/deps/npm.sh" >&2
	exit 1
fi

# inspector EXPECTED_EXIT ARGS...: runs the Inspector CLI on ARGS (the
# server command first), prints its JSON; another exit code is a failure.
inspector() {
	local want=$1
	shift
	local out code=0
	out=$(timeout 120 node "$insp" --cli "$@" --format json -q 2>"$work/stderr") || code=$?
	if [ "$code" != "$want" ]; then
		echo "FAIL: inspector $* exited $code, want $want" >&2
		cat "$work/stderr" >&2
		echo "$out" >&2
		fails=$((fails + 1))
	fi
	printf '%s' "$out"
}

# check NAME JSON EXPR: EXPR (JavaScript over d, the parsed JSON) must be true.
check() {
	if printf '%s' "$2" | node -e '
		const d = JSON.parse(require("fs").readFileSync(0, "utf8") || "null");
		process.exit(new Function("d", "return (" + process.argv[1] + ")")(d) ? 0 : 1);' "$3" 2>/dev/null; then
		echo "ok   $1"
	else
		echo "FAIL $1: $3" >&2
		printf '%s\n' "$2" | head -c 2000 >&2
		echo >&2
		fails=$((fails + 1))
	fi
}
