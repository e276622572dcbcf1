#!/usr/bin/env bash
# The README's test command: sets up what the tests need, then runs every test binary
# (`cargo test --no-fail-fast`: one failing binary does not hide the others' verdicts).
#
#   bash test.sh                       every test
#   bash test.sh --test it match_store any `cargo test` arguments, passed through
#
# What the tests need beyond cargo is a Redis-protocol server for the match store's
# tests (tests/it/common/redis.rs starts its own `redis-server`, and `redis-cli` to make
# a cluster). This finds one (REDIS_SERVER and REDIS_CLI if set, then the PATH, then
# where the platform's package manager puts it) or installs it from the platform's own
# packages: Debian's or Ubuntu's `redis-server` (apt-get, as root or through sudo), or
# Homebrew's `redis` on macOS. Why those and nothing else: each is the platform's own,
# signed and security-patched package that a developer there already trusts (Debian 12
# ships Redis 7.0, what CI tests against), and both ship redis-cli beside the server,
# which the cluster tests need. PyPI's `redis-server` was last released in 2020 (Redis
# 6.0 at most) with no wheel that installs on Debian 12's Python 3.11, npm's
# `redis-server` only starts a server it does not ship, and a download from anywhere
# else is out. The tests are never skipped: with no server found or installed they fail
# saying so.
set -euo pipefail
cd "$(dirname "$0")"

say() { printf 'test.sh: %s\n' "$*" >&2; }

# An executable `name` given by the environment, on the PATH, or where the platform's
# package manager installs it; empty if none.
find_tool() {
  local name=$1 given=$2 dir
  if [ -n "$given" ]; then
    [ -x "$given" ] && { echo "$given"; return; }
    say "$name at $given (from the environment) is not executable"
    return
  fi
  command -v "$name" 2>/dev/null && return
  for dir in /usr/bin /usr/local/bin /opt/homebrew/bin /home/linuxbrew/.linuxbrew/bin; do
    [ -x "$dir/$name" ] && { echo "$dir/$name"; return; }
  done
  return 0
}

install_redis() {
  case "$(uname -s)" in
    Linux)
      command -v apt-get >/dev/null || {
        say "no apt-get: install a Redis-protocol server (redis-server and redis-cli) with your package manager, or set REDIS_SERVER and REDIS_CLI"
        return 1
      }
      local sudo=()
      if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { say "not root and no sudo: apt-get install redis-server as root"; return 1; }
        sudo=(sudo)
      fi
      say "installing Debian's redis-server (apt-get)"
      "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq -o DPkg::Lock::Timeout=300
      "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        -o DPkg::Lock::Timeout=300 redis-server >/dev/null
      ;;
    Darwin)
      local brew
      brew=$(command -v brew || { [ -x /opt/homebrew/bin/brew ] && echo /opt/homebrew/bin/brew; } ||
        { [ -x /usr/local/bin/brew ] && echo /usr/local/bin/brew; } || true)
      [ -n "$brew" ] || { say "no Homebrew: install it (https://brew.sh), or set REDIS_SERVER and REDIS_CLI"; return 1; }
      say "installing Homebrew's redis"
      HOMEBREW_NO_AUTO_UPDATE=1 "$brew" install redis
      ;;
    *)
      say "$(uname -s): install redis-server and redis-cli, or set REDIS_SERVER and REDIS_CLI"
      return 1
      ;;
  esac
}

server=$(find_tool redis-server "${REDIS_SERVER:-}")
cli=$(find_tool redis-cli "${REDIS_CLI:-}")
if [ -z "$server" ] || [ -z "$cli" ]; then
  # A failed install still runs the tests: the match store's fail saying what is missing.
  install_redis || say "no Redis-protocol server: the match store's tests will fail"
  server=$(find_tool redis-server "${REDIS_SERVER:-}")
  cli=$(find_tool redis-cli "${REDIS_CLI:-}")
fi
[ -n "$server" ] && export REDIS_SERVER=$server
[ -n "$cli" ] && export REDIS_CLI=$cli
say "redis-server: ${REDIS_SERVER:-none}; redis-cli: ${REDIS_CLI:-none}"

# Four test threads on any machine unless RUST_TEST_THREADS says otherwise: most of the
# integration tests wait on their servers, Redis and clocks rather than compute (the
# CPU-heavy and the measuring ones keep out of each other's way by a lock,
# tests/it/common/mod.rs), so two threads on two cores left them idle. Measured on the
# 2-core CI machine under load: `--test it` 262 s with two threads, 223 s with four.
export RUST_TEST_THREADS=${RUST_TEST_THREADS:-4}
exec cargo test --no-fail-fast "$@"
