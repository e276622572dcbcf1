#!/usr/bin/env bash
# Instructions per SERVED call of each RPC, counted by callgrind: the release server
# binary under valgrind, called over loopback by a real gRPC client
# (examples/rpc_load.rs, one connection, one call after another), so that hyper, h2,
# tonic and the stack's layers (src/server/stack.rs) are counted with the service.
# Counts do not move with the machine's load, unlike seconds
# (docs/PERFORMANCE.md, "Instructions per served call"). Needs valgrind and curl.
#
#   bash benches/rpc_instructions.sh                  # target/release/allfives
#   bash benches/rpc_instructions.sh path/to/allfives # another build (same API)
#
# Environment: CALLS (measured calls per RPC, default 2000), FRESH_CALLS (the same for
# the cache-hit runs below, default 500: with more the cache's sets of eight start
# to give up prepared games), WARMUP (default 50), RPCS (default "NewGame
# Deal Play Draw Score Suggest"; "Echo" too for a server and rpc_load built with
# --features bench-echo: the bare call, sized as the Play, and each Play's instructions
# over the Echo's are printed, the bar's ratio in instructions), CACHES (default "on off"), SEED (the first match's
# seed, default 1: the server takes client seeds, so that every build is measured on
# the same positions; empty for the server's own seeds), OUT (a directory to keep the
# dumps and logs in; default a temporary one, removed), CLOCKED (1: every match with a
# turn clock, the phone defaults, to compare a clocked call with an unclocked one).
#
# For each token cache setting and RPC in turn: a new server under callgrind (on
# tokio's current-thread runtime, as deployed; defaults otherwise, but no keepalive
# pings, idle or age limits, generous timeouts and no bot floor, valgrind being slow),
# the client prepares the request and sends WARMUP calls, `callgrind_control -z`
# zeroes the counters, the client sends the measured calls, `callgrind_control -d`
# dumps, and the dump's total ÷ calls is one call's instructions. The token cache's
# hits and misses over the measured calls are read from the metrics endpoint.
#
# Cache on: NewGame, Score and Suggest send the same request every time (Score and
# Suggest keep their game under the token they came with: every call a hit); Deal,
# Play and Draw each send FRESH_CALLS requests, each the last token of its own match,
# as a client playing a match does (every call a hit; the same request again would
# miss: the cache takes a token out when it opens it). Cache off (--token-cache 0):
# the same request every time, opened by the cipher and replayed.
#
# For Play it also prints where the instructions go: inclusive counts of the functions
# of each part (callgrind_annotate --tree=both), each part taken where nothing else
# counted holds it (see the awk below), transport the rest. Under valgrind the CPU
# has AES-NI but no SHA extensions, so AES takes its AES-NI path and SHA-256 (the
# state id's HMAC) its software path, whatever the host has.
set -euo pipefail
cd "$(dirname "$0")/.."

# Where a served Play's instructions go, from `callgrind_annotate --tree=both`: per
# call, each part's inclusive count. A function's block is its callers ("<"), itself
# ("*", inclusive) and its callees (">", the inclusive cost of its calls to each).
breakdown() {
  awk -v n="$2" '
    function name(line) {
      sub(/^ *[0-9,]+ +\([ 0-9.]+%\) +[<*>] +/, "", line)
      sub(/ \[[^]]*\]$/, "", line)
      sub(/ \([0-9,]+x\)$/, "", line)
      sub(/^[^:]*:/, "", line)
      return line
    }
    function cost(line) { split(line, f, " "); gsub(",", "", f[1]); return f[1] + 0 }
    # Inclusive counts of the functions named (exactly) in the list, "|" between them.
    function incl_of(list,   k, names, s) {
      s = 0
      split(list, names, "|")
      for (k in names) s += incl[names[k]]
      return s
    }
    # The cost of the calls to functions matching callee_re made by functions
    # matching caller_re.
    function calls(caller_re, callee_re,   k, p, s) {
      s = 0
      for (k in edge) {
        split(k, p, SUBSEP)
        if (p[1] ~ caller_re && p[2] ~ callee_re) s += edge[k]
      }
      return s
    }
    /PROGRAM TOTALS/ { total = cost($0); next }
    /^$/ { current = ""; next }
    / \* / { current = name($0); incl[current] = cost($0); next }
    / > / { if (current != "") edge[current, name($0)] += cost($0); next }
    END {
      service = incl["<allfives::proto::v1::all_fives_service_server::AllFivesServiceServer<T> as tower_service::Service<http::request::Request<B>>>::call::{{closure}}"]
      # Our decoder around prost'"'"'s (src/service/codec.rs; answer_writer.rs before).
      decode = incl_of("<allfives::service::codec::RequestDecoder<U> as tonic::codec::Decoder>::decode|<allfives::service::answer_writer::RequestDecoder<U> as tonic::codec::Decoder>::decode")
      # The state id (HMAC-SHA-256): of the opened token on a miss, of the new one at seal.
      state_id = incl["allfives::state::lineage::state_id"]
      # Replay: the plaintext decoded by prost and the hand replayed (a miss only).
      replay = calls("^allfives::state::open$", "^allfives::state::plaintext::decode$")
      # Open: the cache'"'"'s lookup, or the cipher, without the replay and the state id.
      open = incl["allfives::state::cache::Tokens::open"] - replay \
        - calls("^allfives::state::open$", "^allfives::state::lineage::state_id$")
      # The credential, checked for the viewer and for the seat acting.
      credential = incl["allfives::state::seats::Seats::authorize"]
      # The engine: the move applied (not the replay'"'"'s applies) and the bots.
      engine = incl["allfives_engine::game::Game::apply"] \
        - calls("::replay_into$", "^allfives_engine::game::Game::apply$") \
        + incl["allfives_engine::suggest::play_bots_until"]
      # The view (Game::view, view_out) and the events, as protobuf messages.
      view = incl_of("allfives::service::steps::render|allfives::service::convert::event_out")
      # Seal: the plaintext encoded by prost and sealed by the cipher, without the id.
      seal = incl["allfives::state::cache::Tokens::seal"] \
        - calls("^allfives::state::seal$", "^allfives::state::lineage::state_id$")
      # Encode: what the answer'"'"'s body calls to encode the message (prost now, the
      # hand writer before) and to free it; the encoder itself is inlined there.
      encode = calls("as http_body::Body>::poll_frame", \
        "^prost::encoding::|as prost::message::Message>::encoded_len$|^allfives::service::answer_writer::|^allfives::service::convert::recycle_view$|drop_in_place<core::option::Option<allfives::proto::v1::GameView>>$|drop_in_place<alloc::vec::Vec<allfives::proto::v1::Event>>$")
      # Reading the request body (h2, our RequestBody layer) happens inside the service
      # future but is transport.
      body = incl["tonic::codec::decode::StreamingInner::poll_frame"]
      # No part holds another: the functions nested in two parts are subtracted above
      # by the edges they are called through; say so if they have other callers.
      other = state_id - calls("^allfives::state::(open|seal)$", "^allfives::state::lineage::state_id$")
      if (other != 0) printf "    (state id: %d outside open and seal)\n", other
      other = incl["allfives::state::plaintext::decode"] - replay
      if (other != 0) printf "    (plaintext::decode: %d outside open)\n", other
      parts = decode + open + replay + credential + engine + view + seal + state_id
      glue = service - parts - body
      transport = total - service - encode + body
      printf "    %-11s %8.0f  %s\n", "total", total / n, "(the dump ÷ calls)"
      printf "    %-11s %8.0f  %s\n", "transport", transport / n, "(total − everything below: hyper, h2, the layers, tonic framing, runtime)"
      printf "    %-11s %8.0f  %s\n", "decode", decode / n, "RequestDecoder::decode (prost)"
      printf "    %-11s %8.0f  %s\n", "open", open / n, "Tokens::open − replay − state id (cache lookup or cipher)"
      printf "    %-11s %8.0f  %s\n", "replay", replay / n, "plaintext::decode (prost decode + Game::replay_into)"
      printf "    %-11s %8.0f  %s\n", "credential", credential / n, "Seats::authorize"
      printf "    %-11s %8.0f  %s\n", "engine", engine / n, "Game::apply (not under replay) + play_bots_until"
      printf "    %-11s %8.0f  %s\n", "view", view / n, "steps::render (Game::view + view_out) + event_out"
      printf "    %-11s %8.0f  %s\n", "encode", encode / n, "the answer'"'"'s encoder'"'"'s calls from the response body"
      printf "    %-11s %8.0f  %s\n", "seal", seal / n, "Tokens::seal − state id (plaintext encode + cipher)"
      printf "    %-11s %8.0f  %s\n", "state id", state_id / n, "lineage::state_id (HMAC-SHA-256, soft under valgrind)"
      printf "    %-11s %8.0f  %s\n", "service", glue / n, "the rest of the generated service call (tonic unary, handler glue, cache keep)"
    }' "$1"
}

# `--breakdown DUMP CALLS`: the Play breakdown of a dump kept with OUT.
if [ "${1:-}" = --breakdown ] && [ $# -eq 3 ]; then
  callgrind_annotate --inclusive=yes --threshold=100 --tree=both "$2" 2>/dev/null | breakdown /dev/stdin "$3"
  exit 0
fi

server=${1:-target/release/allfives}
calls=${CALLS:-2000}
fresh_calls=${FRESH_CALLS:-500}
warmup=${WARMUP:-50}
rpcs=${RPCS:-NewGame Deal Play Draw Score Suggest}
seed=${SEED-1}
seeded=()
[ -n "$seed" ] && seeded=(--seed "$seed")
[ "${CLOCKED:-}" = 1 ] && seeded+=(--clocked)
caches=${CACHES:-on off}
client=target/release/examples/rpc_load

for tool in valgrind callgrind_control callgrind_annotate curl; do
  command -v "$tool" >/dev/null || { echo "$0: needs $tool" >&2; exit 2; }
done
if [ "$server" = target/release/allfives ] && [ ! -x "$server" ]; then
  cargo build --release --bin allfives
fi
[ -x "$server" ] || { echo "usage: $0 [SERVER_BINARY]" >&2; exit 2; }
[ -x "$client" ] || cargo build --release --example rpc_load

if [ -n "${OUT:-}" ]; then
  out=$OUT
  mkdir -p "$out"
else
  out=$(mktemp -d)
fi
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill "$pid"; fi
  if [ -z "${OUT:-}" ]; then rm -rf "$out"; fi
}
trap cleanup EXIT

declare -A counted
for cache in $caches; do
  case $cache in
    on) cache_arg=4096 ;;
    off) cache_arg=0 ;;
    *) echo "$0: CACHES holds on and off" >&2; exit 2 ;;
  esac
  for rpc in $rpcs; do
    fresh=()
    n=$calls
    if [ "$cache" = on ] && [[ " Deal Play Draw " == *" $rpc "* ]]; then
      fresh=(--fresh)
      n=$fresh_calls
    fi
    base="$out/$cache-$rpc"
    valgrind --tool=callgrind --callgrind-out-file="$base.cg" "$server" \
      --addr 127.0.0.1:0 --metrics-addr 127.0.0.1:0 --current-thread \
      --token-cache "$cache_arg" --bot-move-floor-ms 0 \
      --request-timeout-ms 600000 --body-timeout-ms 600000 \
      --idle-timeout-secs 0 --max-connection-age-secs 0 --http2-keepalive-secs 0 \
      --shutdown-delay-ms 0 --drain-seconds 1 ${seed:+--allow-client-seeds} \
      ${SERVER_FLAGS:-} >"$base.log" 2>&1 &
    pid=$!
    addr=
    for _ in $(seq 600); do
      addr=$(sed -n 's/.* addr=\(127\.0\.0\.1:[0-9]*\).*/\1/p' "$base.log" | head -1)
      maddr=$(sed -n 's/.*metrics_addr="\{0,1\}\(127\.0\.0\.1:[0-9]*\).*/\1/p' "$base.log" | head -1)
      [ -n "$addr" ] && [ -n "$maddr" ] && break
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    if [ -z "$addr" ]; then
      echo "$0: the server did not start:" >&2
      tail -20 "$base.log" >&2
      exit 1
    fi
    "$client" --addr "$addr" --rpc "$rpc" --calls "$n" --warmup "$warmup" "${fresh[@]}" "${seeded[@]}" \
      --before "curl -sf http://$maddr/metrics >$base.prom0 && callgrind_control -z $pid >/dev/null" \
      --after "callgrind_control -d $pid >/dev/null && curl -sf http://$maddr/metrics >$base.prom1" \
      >"$base.client" 2>&1 || { cat "$base.client" >&2; exit 1; }
    kill "$pid"
    wait "$pid" || true
    pid=
    dump="$base.cg.1"
    [ -s "$dump" ] || { echo "$0: no dump $dump" >&2; exit 1; }
    total=$(callgrind_annotate "$dump" 2>/dev/null | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,)
    read -r h0 m0 < <(awk '/lookups_total\{result="hit"\}/ { h = $2 } /lookups_total\{result="miss"\}/ { m = $2 } END { print h + 0, m + 0 }' "$base.prom0")
    read -r h1 m1 < <(awk '/lookups_total\{result="hit"\}/ { h = $2 } /lookups_total\{result="miss"\}/ { m = $2 } END { print h + 0, m + 0 }' "$base.prom1")
    per_call=$(((total + n / 2) / n))
    printf "cache %-3s %-8s %7d instructions a call  (%s calls%s; cache hits %d, misses %d)\n" \
      "$cache" "$rpc" "$per_call" "$n" "${fresh:+, each its own match}" \
      $((h1 - h0)) $((m1 - m0))
    counted["$cache-$rpc"]=$per_call
    if [ "$rpc" = Play ]; then
      callgrind_annotate --inclusive=yes --threshold=100 --tree=both "$dump" 2>/dev/null >"$base.tree"
      breakdown "$base.tree" "$n"
    fi
  done
done
for cache in $caches; do
  play=${counted["$cache-Play"]:-}
  echo_=${counted["$cache-Echo"]:-}
  if [ -n "$play" ] && [ -n "$echo_" ]; then
    awk -v p="$play" -v e="$echo_" -v c="$cache" \
      'BEGIN { printf "cache %-3s Play / Echo: %.3f (%d instructions over the bare call)\n", c, p / e, p - e }'
  fi
done
