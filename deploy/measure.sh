#!/usr/bin/env bash
# Measures what one replica uses, for sizing the Deployment's requests and limits:
# starts the server (the binary given, default the release build), reads its memory
# idle, plays matches through it with examples/play, and reports peak memory and the
# CPU time it spent per call. Loopback only; bounded by the number of matches.
#
#   deploy/measure.sh [SERVER_BINARY] [GAMES] [CONCURRENCY]
#
# Run from the repository root after `cargo build --release` (or deploy/build.sh) and
# `cargo build --example play`. docs/operations.md records the numbers it printed.
set -euo pipefail
cd "$(dirname "$0")/.."

server_bin=${1:-target/release/allfives}
games=${2:-200}
concurrency=${3:-8}
play_bin=${PLAY_BIN:-target/debug/examples/play}
port=${PORT:-50071}
metrics_port=$((port + 1))

for bin in "$server_bin" "$play_bin"; do
  [ -x "$bin" ] || { echo "measure: $bin not built" >&2; exit 1; }
done

tmp=$(mktemp -d)
key="1:$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"
(umask 077 && printf '%s\n' "$key" >"$tmp/keys")
ALLFIVES_KEYS_FILE="$tmp/keys" ALLFIVES_ADDR="127.0.0.1:$port" \
  ALLFIVES_METRICS_ADDR="127.0.0.1:$metrics_port" ALLFIVES_LOG_FORMAT=json \
  "$server_bin" >"$tmp/server.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT

for _ in $(seq 100); do
  (: <"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
sleep 1

kib() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$pid/status"; }
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)

echo "measure: server $server_bin, pid $pid, $(awk '/^Threads:/{print $2}' "/proc/$pid/status") threads"
echo "measure: idle RSS $(kib VmRSS) KiB"
before=$(ticks)
start=$(date +%s.%N)
out=$("$play_bin" --addr "http://127.0.0.1:$port" --games "$games" --concurrency "$concurrency")
end=$(date +%s.%N)
after=$(ticks)
echo "$out"
calls=$(sed -n 's/.* \([0-9]*\) calls in .*/\1/p' <<<"$out")
cpu=$(awk -v a="$after" -v b="$before" -v hz="$hz" 'BEGIN {printf "%.2f", (a - b) / hz}')
wall=$(awk -v e="$end" -v s="$start" 'BEGIN {printf "%.2f", e - s}')
echo "measure: RSS after load $(kib VmRSS) KiB, peak RSS $(kib VmHWM) KiB"
echo "measure: server CPU ${cpu} s over ${wall} s wall for $calls calls:" \
  "$(awk -v c="$cpu" -v n="$calls" 'BEGIN {printf "%.1f", c / n * 1e6}') µs of CPU per call," \
  "$(awk -v c="$cpu" -v n="$calls" 'BEGIN {printf "%.0f", n / c}') calls per CPU-second," \
  "average $(awk -v c="$cpu" -v w="$wall" 'BEGIN {printf "%.2f", c / w}') cores busy"
