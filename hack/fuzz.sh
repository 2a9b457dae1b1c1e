#!/usr/bin/env bash
# Run every go test -fuzz target of the module briefly (FUZZTIME each,
# default 10s), so make test exercises the fuzzers and their seed corpora.
#
# Each package's fuzzing test binary is built once (go test -c -fuzz: the
# fuzzing build instruments every dependency, so one go command at a time
# compiles each of them once), then the targets run FUZZ_JOBS at a time
# (default 2), each with FUZZ_WORKERS fuzzing processes (default 1), in
# their package's directory as go test runs them: a failing input is
# written to its testdata/fuzz. On the 2 cores make test has, fuzzing
# takes a core per worker whatever else runs: 12 targets with go test's
# default of a worker per core were 240 core-seconds of a fresh run that
# is busy throughout, and at its end, with nothing else left, the targets
# ran one after the other. FUZZTIME=10m FUZZ_WORKERS=2 fuzzes for real.
#
# Go 1.26's fuzz coordinator can fail a target with a bare "context
# deadline exceeded" when -fuzztime ends while a worker is busy (a race in
# its shutdown, golang/go#75804, fixed in Go 1.27): no input fails, none is
# written. On a busy machine (make test fuzzes while the end-to-end tests
# run) it happens. Such a run is retried, up to twice; a run that wrote a
# failing input, panicked or failed otherwise fails at once.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# the flags every go command of the project shares (hack/build.env)
set -a; . hack/build.env; set +a
fuzztime=${FUZZTIME:-10s}
at_once=${FUZZ_JOBS:-2}
workers=${FUZZ_WORKERS:-1}
cachedir=$(go env GOCACHE)/fuzz
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# deadline_flake LOG says whether the failed run in LOG is only the
# coordinator's shutdown race.
deadline_flake() {
  grep -q 'context deadline exceeded' "$1" &&
    ! grep -q -e 'Failing input written' -e '^panic:' -e '_test.go:[0-9]*:' "$1"
}

# fuzz DIR TARGET BINARY LOG runs one target, retrying the shutdown race;
# everything it says goes to LOG.
fuzz() {
  local attempt run=$4.run
  for attempt in 1 2 3; do
    echo "[fuzz] $1 $2 for $fuzztime, $workers worker(s)" >>"$4"
    if (cd "$root/$1" && "$3" -test.run '^$' -test.fuzz "^${2}\$" -test.fuzztime "$fuzztime" \
      -test.parallel "$workers" -test.fuzzcachedir "$cachedir") >"$run" 2>&1; then
      cat "$run" >>"$4"
      echo "ok  	$1 $2" >>"$4"
      return 0
    fi
    cat "$run" >>"$4"
    if ! deadline_flake "$run" || [ "$attempt" = 3 ]; then
      echo "FAIL	$1 $2" >>"$4"
      return 1
    fi
    echo "[fuzz] $1 $2: only Go's fuzztime shutdown race (golang/go#75804, no failing input); running it again" >>"$4"
  done
}

pkgs=$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u)
targets=()
for dir in $pkgs; do
  bin=$work/$(echo "${dir#./}" | tr / _).test
  echo "[fuzz] building $dir" >&2
  go test -c -fuzz . -o "$bin" "$dir"
  for target in $(grep -h -o '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | sed 's/^func //' | sort -u); do
    targets+=("$dir $target $bin")
  done
done

# Run them FUZZ_JOBS at a time, then print each target's log in order
# and fail if any failed.
for i in "${!targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$at_once" ]; do wait -n || true; done
  read -r dir target bin <<<"${targets[$i]}"
  { if fuzz "$dir" "$target" "$bin" "$work/$i.log"; then echo 0; else echo 1; fi >"$work/$i.rc"; } &
done
wait
status=0
for i in "${!targets[@]}"; do
  cat "$work/$i.log"
  [ "$(cat "$work/$i.rc")" = 0 ] || status=1
done
exit $status
