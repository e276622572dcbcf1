#!/usr/bin/env bash
# Instructions per call of one Play's parts, counted by callgrind in the `call` benchmark:
# figures that do not move with the machine's load, unlike the benchmark's times
# (docs/PERFORMANCE.md, "One call's parts"). Needs valgrind.
#
#   bash benches/instructions.sh            # the typical 2-player Play
#   bash benches/instructions.sh 4p-long    # the 4-player Play with a full score sheet
#   bash benches/instructions.sh 2p cached  # the same Play, its token's game kept by
#                                           # the token cache (src/state/cache.rs)
#
# Each figure is a function's inclusive instruction count over the run divided by the
# times it was called; the whole call and the allocations are per Play handled with its
# answer encoded (the criterion warm-up and set-up are left out). Under valgrind the AES code takes its AES-NI path (valgrind has no AVX-512),
# so the cipher's figures are those of AES-NI, not of the VAES path a server may take.
set -euo pipefail
cd "$(dirname "$0")/.."
position=${1:-2p}
case "${2:-}" in
  "") bench_name=all-play-answer-written ;;
  cached) bench_name=all-play-answer-written-cached ;;
  *) echo "usage: $0 [2p|4p-long] [cached]" >&2; exit 2 ;;
esac
bench=$(cargo bench --bench call --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\))$/\1/p' | tail -1)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$out" "$bench" --bench --exact --profile-time 1 \
  "call/$position/$bench_name" >/dev/null 2>&1
callgrind_annotate --tree=caller --inclusive=yes "$out" 2>/dev/null | awk '
  BEGIN {
    n = split("criterion::bencher::Bencher<M>::iter|allfives::service::moves::play|" \
      "allfives::state::cache::Tokens::open|allfives::state::open|allfives::state::plaintext::decode|" \
      "allfives_engine::replay::<impl allfives_engine::game::Game>::replay|" \
      "allfives_engine::game::Game::apply|" \
      "allfives_engine::view::<impl allfives_engine::game::Game>::view|" \
      "allfives::service::convert::view_out|allfives::state::seal|" \
      "allfives::state::plaintext::encode_into|allfives::state::cache::Tokens::keep|" \
      "call::play_written|malloc", names, "|")
  }
  # A block: the callers ("<" lines, each "(Nx)"), then the function ("*" line).
  /^$/ { calls = 0; next }
  / < / { if (match($0, /\(([0-9,]+)x\)/)) { c = substr($0, RSTART + 1, RLENGTH - 3); gsub(",", "", c); calls += c } next }
  /\*  / {
    for (i = 1; i <= n; i++) {
      if (index($0, ":" names[i] " [") && !(names[i] in ir)) {
        v = $1; gsub(",", "", v); ir[names[i]] = v; count[names[i]] = calls
      }
    }
  }
  END {
    # One iteration is one Play handled and its answer encoded (call::play_written).
    written = "call::play_written"
    calls = count[written]
    for (i = 1; i <= n; i++) {
      f = names[i]
      if (!(f in ir)) continue
      if (f == "malloc" && !(names[1] in ir)) printf "%8.1f   allocations (with the set-up'"'"'s copy of the game)\n", count[f] / calls
      else if (f == "malloc") printf "%8.1f   allocations\n", count[f] / calls
      else if (i == 1) printf "%8.0f   the whole call (handler, answer encoded)\n", ir[f] / calls
      else if (f == written) printf "%8.0f   the handler and its answer encoded by prost (play_written)\n", ir[f] / count[f]
      else printf "%8.0f   %s\n", ir[f] / count[f], f
    }
  }'
