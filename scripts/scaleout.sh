#!/usr/bin/env bash
# Scale-out proof: REPLICAS manglecp servers (default 3) share one Redis
# behind nginx (round-robin), and the load harness drives nginx with
# evaluations, each followed by the invocation of its macro-tool over a
# second connection, so invocations land on other replicas than their
# evaluations. Passes only with zero macro_not_found and zero unexpected
# answers.
#
# Usage: scripts/scaleout.sh [--compare] [--control]
#   DURATION (60s)  CLIENTS (64)  REPLICAS (3)  STORE (redis|memory)  BASE_PORT (18080)
#   --compare  also runs 1 replica with the same load and prints both figures
#   --control  also runs REPLICAS replicas WITHOUT Redis (--store memory)
#              for 10 s and expects macro_not_found: shows the check bites
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-60s}
CLIENTS=${CLIENTS:-64}
REPLICAS=${REPLICAS:-3}
STORE=${STORE:-redis}
BASE_PORT=${BASE_PORT:-18080}
compare=0 control=0
for a in "$@"; do
	case "$a" in
	--compare) compare=1 ;;
	--control) control=1 ;;
	*) echo "usage: $0 [--compare] [--control]" >&2; exit 2 ;;
	esac
done
redis_bin=$(command -v redis-server || command -v valkey-server || true)
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
if [ -z "$redis_bin" ] || [ ! -x "$nginx_bin" ]; then
	echo "scaleout: needs redis-server and nginx (scripts/deps/redis.sh installs them)" >&2
	exit 1
fi

work=$(mktemp -d /tmp/manglecp-scaleout.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	[ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/manglecp" ./cmd/manglecp
go build -o "$work/manglecp-load" ./cmd/manglecp-load
redis_port=$((BASE_PORT + 79))
"$redis_bin" --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" --loglevel warning >"$work/redis.log" 2>&1 &
pids+=($!)
export MANGLECP_CONFIRMATION_KEY="scaleout shared confirmation key $(date +%s)"
export MANGLECP_STORE_KEY="scaleout shared store key $(date +%s)"

wait_http() { # URL
	for _ in $(seq 1 200); do
		curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "scaleout: $1 did not answer" >&2
	return 1
}

replica_pids=()
start_replicas() { # N STORE
	local n=$1 store=$2 i port
	replica_pids=()
	for i in $(seq 1 "$n"); do
		port=$((BASE_PORT + i))
		local flag=(--store memory)
		[ "$store" = redis ] && flag=(--store "redis://127.0.0.1:$redis_port/0")
		"$work/manglecp" serve --addr "127.0.0.1:$port" --config "$work/config.json" --log-level warn "${flag[@]}" >"$work/replica-$i.log" 2>&1 &
		replica_pids+=($!)
		pids+=($!)
	done
	for i in $(seq 1 "$n"); do wait_http "http://127.0.0.1:$((BASE_PORT + i))/readyz"; done
}
stop_replicas() {
	for p in "${replica_pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${replica_pids[@]}"; do wait "$p" 2>/dev/null || true; done
	replica_pids=()
}

start_nginx() { # N
	local n=$1 i servers=""
	for i in $(seq 1 "$n"); do servers+="    server 127.0.0.1:$((BASE_PORT + i)) max_fails=0;"$'\n'; done
	[ -f "$work/nginx.pid" ] && { kill "$(cat "$work/nginx.pid")" 2>/dev/null || true; sleep 0.3; }
	mkdir -p "$work/nginx-tmp" && chmod 777 "$work/nginx-tmp"
	cat >"$work/nginx.conf" <<NGINX
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/nginx-tmp/body;
  proxy_temp_path $work/nginx-tmp/proxy;
  fastcgi_temp_path $work/nginx-tmp/fastcgi;
  uwsgi_temp_path $work/nginx-tmp/uwsgi;
  scgi_temp_path $work/nginx-tmp/scgi;
  upstream manglecp {
$servers    keepalive 128;
  }
  server {
    listen 127.0.0.1:$BASE_PORT;
    client_max_body_size 17m;
    location / {
      proxy_pass http://manglecp;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$host; # the replicas listen on loopback and answer loopback Host names
      proxy_read_timeout 300s;
      add_header X-Served-By \$upstream_addr always;
    }
  }
}
NGINX
	"$nginx_bin" -p "$work" -c "$work/nginx.conf"
	wait_http "http://127.0.0.1:$BASE_PORT/readyz"
}

cat >"$work/config.json" <<'JSON'
{"max_concurrent_evaluations": 256, "max_evaluations_per_caller": 256, "queue_timeout_ms": 60000}
JSON

run() { # N STORE DURATION -> prints the report, sets $report
	start_replicas "$1" "$2"
	start_nginx "$1"
	echo "== $1 replica(s), store $2, $CLIENTS clients, $3, nginx round-robin, $(nproc) CPU cores on this machine"
	set +e
	report=$("$work/manglecp-load" -target "http://127.0.0.1:$BASE_PORT" -transport http -c "$CLIENTS" -d "$3" -mix evaluate-invoke)
	set -e
	echo "$report"
	stop_replicas
}

status=0
if [ "$compare" = 1 ]; then
	run 1 "$STORE" "$DURATION"
	one=$(echo "$report" | sed -n 's/.*rps=\([0-9]*\).*/\1/p')
fi
run "$REPLICAS" "$STORE" "$DURATION"
many=$(echo "$report" | sed -n 's/.*rps=\([0-9]*\).*/\1/p')
if echo "$report" | grep -q "macro_not_found"; then
	echo "FAIL: macro_not_found behind the load balancer" >&2
	status=1
fi
if ! echo "$report" | grep -q "^unexpected=0 "; then
	echo "FAIL: unexpected answers" >&2
	status=1
fi
if [ "$compare" = 1 ]; then
	echo "== throughput: 1 replica ${one} req/s, $REPLICAS replicas ${many} req/s on $(nproc) cores (load generator, nginx and Redis share them)"
fi
if [ "$control" = 1 ]; then
	run "$REPLICAS" memory 10s
	if echo "$report" | grep -q "macro_not_found"; then
		echo "control: without a shared store, invocations on other replicas fail with macro_not_found (as expected)"
	else
		echo "FAIL: the control run without Redis saw no macro_not_found; the check would not catch a missing shared store" >&2
		status=1
	fi
fi
[ "$status" = 0 ] && echo "PASS: zero macro_not_found, zero unexpected answers with $REPLICAS replicas behind nginx"
exit "$status"
