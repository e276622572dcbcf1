#!/bin/sh
# Generates the Go code of the public API into gen/allfives/v1 (package allfivesv1)
# from the repository's proto/, with protoc and the two plugins go.mod pins as tool
# dependencies (built into bin/ first, so their versions are go.mod's, never whatever
# is on PATH). The proto has no go_package: the M option maps it into this module.
# The google.rpc error details come from genproto's errdetails package, not from here.
#
#   sh generate.sh            (or: go generate ./...)
#   PROTOC=/path/to/protoc sh generate.sh
set -eu
cd "$(dirname "$0")"
PROTO=../../../proto
PKG='example.com/allfives/goclient/gen/allfives/v1;allfivesv1'
PROTOC=${PROTOC:-protoc}
command -v "$PROTOC" >/dev/null || {
  echo "generate.sh: no protoc (Debian: apt-get install protobuf-compiler; 3.15 or later)" >&2
  exit 1
}
mkdir -p bin gen
go build -o bin/ google.golang.org/protobuf/cmd/protoc-gen-go google.golang.org/grpc/cmd/protoc-gen-go-grpc
rm -rf gen/allfives
"$PROTOC" -I "$PROTO" \
  --plugin=protoc-gen-go=bin/protoc-gen-go --plugin=protoc-gen-go-grpc=bin/protoc-gen-go-grpc \
  --go_out=gen --go_opt=paths=source_relative --go_opt="Mallfives/v1/allfives.proto=$PKG" \
  --go-grpc_out=gen --go-grpc_opt=paths=source_relative --go-grpc_opt="Mallfives/v1/allfives.proto=$PKG" \
  allfives/v1/allfives.proto
