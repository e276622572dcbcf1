#!/usr/bin/env bash
# Watch's push latency and memory, side by side in one run: a redis-server and two
# release replicas sharing it (--match-store redis) on loopback; examples/watch_load
# opens STREAMS Watch streams on replica B over MATCHES matches and plays MOVES moves on
# replica A at RATE a second, timing each delivery from the Play sent to the stream's
# message, and reads B's resident memory before and after the streams opened.
# docs/PERFORMANCE.md ("Watch") quotes it.
#
#   bash benches/watch_push.sh          (from anywhere; builds the release binaries)
#
# Environment: STREAMS (default 1000), MATCHES (100), MOVES (500), RATE (100), RUNS (2:
# the whole measurement again, the machine being shared).
set -euo pipefail
cd "$(dirname "$0")/.."
streams=${STREAMS:-1000}
matches=${MATCHES:-100}
moves=${MOVES:-500}
rate=${RATE:-100}
runs=${RUNS:-2}

cargo build --release --locked --bin allfives --example watch_load
server=target/release/allfives
load=target/release/examples/watch_load

tmp=$(mktemp -d -t allfives-watch.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_port() {
  for _ in $(seq 100); do
    (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on $1" >&2
  exit 1
}

echo "machine: $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1); load $(cut -d' ' -f1-3 /proc/loadavg)"
for run in $(seq "$runs"); do
  redis_port=$(free_port)
  redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --dir "$tmp" \
    >"$tmp/redis.log" 2>&1 &
  pids+=($!)
  wait_port "$redis_port"
  key="1:$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"
  flags=(--metrics-addr off --match-store redis --match-store-url "redis://127.0.0.1:$redis_port"
    --max-connections 8192 --max-watch-streams 20000)
  a=$(free_port)
  b=$(free_port)
  ALLFIVES_KEYS="$key" "$server" --addr "127.0.0.1:$a" "${flags[@]}" >"$tmp/a.log" 2>&1 &
  pids+=($!)
  ALLFIVES_KEYS="$key" "$server" --addr "127.0.0.1:$b" "${flags[@]}" >"$tmp/b.log" 2>&1 &
  b_pid=$!
  pids+=("$b_pid")
  wait_port "$a"
  wait_port "$b"
  echo "run $run: $("$load" --play-addr "http://127.0.0.1:$a" --watch-addr "http://127.0.0.1:$b" \
    --streams "$streams" --matches "$matches" --moves "$moves" --rate "$rate" --watch-pid "$b_pid")"
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
done
