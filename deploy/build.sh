#!/bin/sh
# The release build of the server: the one command deploy/Dockerfile RUNs and CI runs
# (.ci/deploy-check, in a copy of exactly the files the Docker build context admits),
# so a green CI proves the image's build step.
#
#   deploy/build.sh [OUT_DIR]    builds, then copies the binary to OUT_DIR/allfives
#
# POSIX sh: the builder image has no bash.
set -eu
cd "$(dirname "$0")/.."
cargo build --locked --release --bin allfives
if [ "$#" -gt 0 ]; then
  mkdir -p "$1"
  cp "${CARGO_TARGET_DIR:-target}/release/allfives" "$1/allfives"
fi
