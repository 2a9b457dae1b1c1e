#!/usr/bin/env bash
# Run every go test -fuzz target of the module briefly (FUZZTIME each,
# default 10s), so make test exercises the fuzzers and their seed corpora.
#
# Go 1.26's fuzz coordinator can fail a target with a bare "context
# deadline exceeded" when -fuzztime ends while a worker is busy (a race in
# its shutdown, golang/go#75804, fixed in Go 1.27): no input fails, none is
# written. On a busy machine (make test fuzzes while the end-to-end tests
# run) it happens. Such a run is retried, up to twice; a run that wrote a
# failing input, panicked or failed otherwise fails at once.
set -euo pipefail
cd "$(dirname "$0")/.."
# the flags every go command of the project shares (hack/build.env)
set -a; . hack/build.env; set +a
fuzztime=${FUZZTIME:-10s}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# deadline_flake says whether the failed run in $log is only the
# coordinator's shutdown race.
deadline_flake() {
  grep -q 'context deadline exceeded' "$log" &&
    ! grep -q -e 'Failing input written' -e '^panic:' -e '_test.go:[0-9]*:' "$log"
}

fuzz() { # dir target
  local attempt
  for attempt in 1 2 3; do
    echo "[fuzz] $1 $2 for $fuzztime" >&2
    if go test -run '^$' -fuzz "^${2}\$" -fuzztime "$fuzztime" "$1" >"$log" 2>&1; then
      cat "$log"
      return 0
    fi
    cat "$log"
    if ! deadline_flake || [ "$attempt" = 3 ]; then
      return 1
    fi
    echo "[fuzz] $1 $2: only Go's fuzztime shutdown race (golang/go#75804, no failing input); running it again" >&2
  done
}

pkgs=$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u)
for dir in $pkgs; do
  for target in $(grep -h -o '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | sed 's/^func //' | sort -u); do
    fuzz "$dir" "$target"
  done
done
