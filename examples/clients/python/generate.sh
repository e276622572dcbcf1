#!/usr/bin/env bash
# Generates the Python client code of allfives.v1 from the repository's proto/ into
# gen/ (git-ignored): allfives/v1/allfives_pb2.py (messages), allfives_pb2.pyi (types
# for editors) and allfives_pb2_grpc.py (the AllFivesServiceStub), with grpcio-tools'
# bundled protoc. Run it with the Python that has requirements.txt installed:
#
#   PYTHON=.venv/bin/python ./generate.sh      (default: python3)
#
# The code is generated, not committed: proto/ stays the one source, and the pinned
# grpcio-tools makes the output the same every time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
proto="$here/../../../proto"
python=${PYTHON:-python3}

rm -rf "$here/gen"
mkdir -p "$here/gen"
"$python" -m grpc_tools.protoc \
  --proto_path="$proto" \
  --python_out="$here/gen" \
  --pyi_out="$here/gen" \
  --grpc_python_out="$here/gen" \
  allfives/v1/allfives.proto
