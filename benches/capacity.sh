#!/usr/bin/env bash
# Matches per core (issue 24): for each kind of table (humans, medium, hard), the
# largest number of matches in play at a human pace that the release server pinned to
# one core serves with the human moves' p99 under P99_MS and no refusal or error.
# examples/botload plays them; each step is a fresh server (`--server --cpus`), the
# load generator pinned to the other cores. First a calibration per kind (CALIBRATE
# whole matches without think time: the moves a match takes), then the matches
# doubled from START until a step fails, then bisected down to RESOLUTION percent.
# Every step prints a line; at the end a table: kind, matches per core, the p99 there,
# the server's CPU per match and its CPU utilisation.
#
#   cargo build --release --bin allfives --example botload
#   bash benches/capacity.sh                       (from anywhere; on a quiet machine)
#   STEP_SECS=10 KINDS=hard START=8 bash benches/capacity.sh       (a quick look)
#
# Each step takes about WARMUP_SECS + STEP_SECS (default 8.5 + 25 s): a kind takes
# about 8 to 12 steps. Only loopback is used; every process started is stopped.
set -euo pipefail
cd "$(dirname "$0")/.."

KINDS=${KINDS:-humans medium hard}
SERVER=${SERVER:-target/release/allfives}
BOTLOAD=${BOTLOAD:-target/release/examples/botload}
SERVER_CPUS=${SERVER_CPUS:-0}   # the core the server is pinned to (it is told it has one)
# The load generator on the other cores (on a one-core machine, the same one).
CLIENT_CPUS=${CLIENT_CPUS:-$(n=$(nproc); [ "$n" -gt 2 ] && echo "1-$((n - 1))" || echo $((n - 1)))}
THINK_MS=${THINK_MS:-3000}
STEP_SECS=${STEP_SECS:-25}
# Matches start over one think time, then think up to 1.5 of one: all are in play after.
WARMUP_SECS=${WARMUP_SECS:-$(awk -v t="$THINK_MS" 'BEGIN { print t * 2.5 / 1000 + 1 }')}
START=${START:-16}
MAX_MATCHES=${MAX_MATCHES:-4000} # with CONNECTIONS=each, under the server's 4096 connections
RESOLUTION=${RESOLUTION:-10}     # percent: bisect until the bounds are this close
P99_MS=${P99_MS:-100}
CONNECTIONS=${CONNECTIONS:-each} # each, shared or a count (examples/botload --connections)
CALIBRATE=${CALIBRATE:-6}
EXTRA=${EXTRA:-}                 # more botload flags, e.g. --gateway or --server-arg=...
LOG=${LOG:-target/capacity.log}  # every step's full report

for f in "$SERVER" "$BOTLOAD"; do
  [ -x "$f" ] || { echo "capacity: $f missing: cargo build --release --bin allfives --example botload" >&2; exit 1; }
done
command -v jq >/dev/null || { echo "capacity: jq is needed (apt-get install jq)" >&2; exit 1; }

echo "capacity: server on CPU $SERVER_CPUS, load generator on $CLIENT_CPUS; think $THINK_MS ms;" \
  "steps of ${WARMUP_SECS} s warm-up + $STEP_SECS s; p99 bar $P99_MS ms; connections $CONNECTIONS;" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg); every report in $LOG"
: >"$LOG"

# botload KIND ARGS...: one run, its JSON line on stdout (its report in $LOG).
botload() {
  local kind=$1 out
  shift
  # shellcheck disable=SC2086 # EXTRA is split on purpose
  out=$(taskset -c "$CLIENT_CPUS" "$BOTLOAD" --server "$SERVER" --cpus "$SERVER_CPUS" \
    --kind "$kind" --think-ms "$THINK_MS" --connections "$CONNECTIONS" --json $EXTRA "$@") || true
  sed -n '/^{/!p' <<<"$out" >>"$LOG"
  grep '^{' <<<"$out" || { echo "capacity: botload gave no figures (see $LOG)" >&2; return 1; }
}

# one NUMBER: it with one decimal (or as it is, if not a number).
one() { awk -v v="$1" 'BEGIN { if (v ~ /^[0-9.]+$/) printf "%.1f", v; else print v }'; }

results=()
for kind in $KINDS; do
  cal=$(botload "$kind" --matches 2 --secs 0 --calibrate "$CALIBRATE")
  per_match=$(jq -r .moves_per_match <<<"$cal")
  full_cpu=$(jq -r .server_cpu_ms_per_match_no_think <<<"$cal")
  [ "$per_match" != null ] || { echo "capacity: $kind: calibration finished no match" >&2; exit 1; }
  printf 'capacity: %s: %.1f human moves a match; %.1f ms of server CPU a match without think time\n' \
    "$kind" "$per_match" "$full_cpu"

  lo=0 hi=0 m=$START best=""
  while :; do
    json=$(botload "$kind" --matches "$m" --secs "$STEP_SECS" --warmup-secs "$WARMUP_SECS" \
      --calibrate 0 --moves-per-match "$per_match")
    read -r p99 refused errors cpu per_match_cpu <<<"$(jq -r '[.moves.p99, .refused_total,
      .errors_total, .server_cpu_per_s, .server_cpu_ms_per_match] | map(tostring) | join(" ")' <<<"$json")"
    p99=$(one "$p99") per_match_cpu=$(one "$per_match_cpu")
    ok=$(awk -v p="$p99" -v bar="$P99_MS" -v r="$refused" -v e="$errors" \
      'BEGIN { print (p != "null" && p < bar && r == 0 && e == 0) ? "pass" : "fail" }')
    printf 'capacity: %-6s %6d matches: p99 %8s ms, %s refused, %s errors, server CPU %5s%% of a core, %s ms a match: %s\n' \
      "$kind" "$m" "$p99" "$refused" "$errors" "$(awk -v c="$cpu" 'BEGIN { printf "%.1f", c * 100 }')" \
      "$per_match_cpu" "$ok"
    if [ "$ok" = pass ]; then
      lo=$m best="$p99 $per_match_cpu $cpu"
      [ "$m" -lt "$MAX_MATCHES" ] || break
    else
      hi=$m
    fi
    if [ "$hi" -eq 0 ]; then
      m=$((m * 2 > MAX_MATCHES ? MAX_MATCHES : m * 2))
    else
      [ $((hi - lo)) -gt $((lo * RESOLUTION / 100 > 1 ? lo * RESOLUTION / 100 : 1)) ] || break
      m=$(((lo + hi) / 2))
    fi
  done
  if [ -z "$best" ]; then
    results+=("$kind <$hi - - -")
  else
    read -r p99 per_match_cpu cpu <<<"$best"
    capped=""
    [ "$hi" -ne 0 ] || capped="≥"
    results+=("$kind $capped$lo $p99 $per_match_cpu $cpu")
  fi
done

echo
printf '%-8s %16s %12s %22s %16s\n' kind "matches per core" "p99 ms" "server CPU ms a match" "CPU utilisation"
for r in "${results[@]}"; do
  read -r kind n p99 per_match_cpu cpu <<<"$r"
  printf '%-8s %16s %12s %22s %15s%%\n' "$kind" "$n" "$p99" "$per_match_cpu" \
    "$(awk -v c="$cpu" 'BEGIN { if (c == "-") print "-"; else printf "%.1f", c * 100 }')"
done
