#!/usr/bin/env bash
# Regenerate the Go stubs of protos/planner/v1 into gen/planner/v1.
#
# Usage: clients/go/gen.sh [--check]
#   --check  generate into a temporary directory and fail when it differs from gen/.
#
# protoc comes from the repository's Python environment (grpcio-tools); the two Go plugins are
# installed at the pinned versions below into clients/go/.bin (not committed). The protos'
# go_package already names this module's gen/planner/v1; the M options state it once more so
# the mapping holds even for a proto that forgets the option.
set -euo pipefail

PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
MODULE=github.com/planner-svc/planner-svc/clients/go
GO_PKG="$MODULE/gen/planner/v1;plannerv1"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
BIN="$HERE/.bin"

mkdir -p "$BIN"
GOBIN="$BIN" go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION"
GOBIN="$BIN" go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION"

WKT="$("$PYTHON" -c 'import grpc_tools, os; print(os.path.join(os.path.dirname(grpc_tools.__file__), "_proto"))')"

out="$HERE/gen"
if [[ "${1:-}" == "--check" ]]; then
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
fi

cd "$ROOT/protos"
mapfile -t protos < <(find planner -name '*.proto' | LC_ALL=C sort)
m_opts=()
for p in "${protos[@]}"; do
  m_opts+=("M$p=$GO_PKG")
done
go_opts="module=$MODULE/gen"
grpc_opts="module=$MODULE/gen"
for m in "${m_opts[@]}"; do
  go_opts+=",$m"
  grpc_opts+=",$m"
done

mkdir -p "$out"
PATH="$BIN:$PATH" "$PYTHON" -m grpc_tools.protoc \
  -I . -I "$WKT" \
  --go_out="$out" --go_opt="$go_opts" \
  --go-grpc_out="$out" --go-grpc_opt="$grpc_opts" \
  "${protos[@]}"

if [[ "${1:-}" == "--check" ]]; then
  if ! diff -r "$HERE/gen" "$out"; then
    echo "clients/go/gen differs from protos/: run clients/go/gen.sh" >&2
    exit 1
  fi
  echo "clients/go/gen is up to date"
fi
