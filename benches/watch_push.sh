#!/usr/bin/env bash
# Watch's push latency and memory, side by side in one run: a redis-server and two
# release replicas sharing it (--match-store redis) on loopback; examples/watch_load
# opens STREAMS Watch streams on replica B, PER_CONNECTION a connection, over MATCHES
# matches and plays MOVES moves on replica A at RATE a second, timing each delivery from
# the Play sent to the stream's message, and reads B's resident memory before and after
# the streams opened. docs/PERFORMANCE.md ("Watch") quotes it.
#
# Each connection is a device of its own: it names a distinct address in
# `x-forwarded-for`, which the replicas trust (`--trusted-client-header`), as behind the
# deployment's gateway. So the per-client bounds (64 streams, 8 on one match) count
# devices as they do in production and stay at their defaults; and a match is watched by
# STREAMS / MATCHES spectators, within its 24.
#
#   bash benches/watch_push.sh          (from anywhere; builds the release binaries)
#
# Environment: STREAMS (default 1000), PER_CONNECTION (8; 1 is a phone's shape),
# MATCHES (STREAMS / 10), MOVES (500), RATE (100), RUNS (2: the whole measurement again,
# the machine being shared). 10,000 streams one a connection need `ulimit -n` above
# 10,100 (this script raises its soft limit to the hard one).
set -euo pipefail
cd "$(dirname "$0")/.."
streams=${STREAMS:-1000}
per_connection=${PER_CONNECTION:-8}
matches=${MATCHES:-$(((streams + 9) / 10))}
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

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
connections=$(((streams + per_connection - 1) / per_connection))
if (($(ulimit -n) < connections + 128)); then
  echo "open files limit $(ulimit -n) is below $connections connections: raise ulimit -n" >&2
  exit 1
fi

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
    --max-connections $((connections + 64)) --max-watch-streams "$streams"
    --trusted-client-header x-forwarded-for)
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
    --streams "$streams" --per-connection "$per_connection" --matches "$matches" \
    --client-header x-forwarded-for --moves "$moves" --rate "$rate" --watch-pid "$b_pid")"
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
done
