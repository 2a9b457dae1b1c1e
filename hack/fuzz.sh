#!/usr/bin/env bash
# Run every go test -fuzz target of the module briefly (FUZZTIME each,
# default 10s), so make test exercises the fuzzers and their seed corpora.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS=-buildvcs=false
fuzztime=${FUZZTIME:-10s}
pkgs=$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u)
for dir in $pkgs; do
  for target in $(grep -h -o '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | sed 's/^func //' | sort -u); do
    echo "[fuzz] $dir $target for $fuzztime" >&2
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$dir"
  done
done
