#!/usr/bin/env bash
# Build, once per version, the tools the chart and monitoring tests run:
# helm (helm.sh/helm/v4 cmd/helm) and promtool (the Prometheus module's
# cmd/promtool), from the Go module proxy at the versions in
# hack/versions.env.
#
# They are built here rather than pinned in go.mod with `tool`: the
# Prometheus module alone would add some 150 modules (cloud SDKs for its
# service discovery) to Herald's go.mod and go.sum, and helm another 80;
# neither is a dependency of anything Herald ships.
#
# Binaries land in $HERALD_CACHE/bin/<tool>-<version>; an existing binary is
# never rebuilt. A cold build takes a few minutes per tool on 2 cores.
#
# Usage: hack/build-tools.sh [tool...]   tools: helm promtool (default: both)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"

HERALD_CACHE=${HERALD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/herald}
BIN=$HERALD_CACHE/bin
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOWORK=off
mkdir -p "$BIN"

tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=(helm promtool)

log() { printf '[tools] %s\n' "$*" >&2; }

# install TOOL VERSION PACKAGE [go build flags...]
# One build at a time per tool: `make test` builds the tools beside the
# tests, and a test that needs a tool first (testenv.Tool runs this
# script) waits on the lock for that build instead of starting another.
install() {
  local tool=$1 version=$2 pkg=$3 out tmp t0 lock
  shift 3
  out=$BIN/$tool-$version
  [ -x "$out" ] && return 0
  exec {lock}>"$BIN/.$tool-$version.lock"
  flock "$lock"
  if [ -x "$out" ]; then
    exec {lock}>&-
    return 0
  fi
  tmp=$(mktemp -d)
  log "building $tool $version (cold: a few minutes; cached afterwards in $BIN)"
  t0=$(date +%s)
  (cd / && GOBIN=$tmp go install -trimpath "$@" "$pkg@$version")
  mv "$tmp/$tool" "$out"
  rm -rf "$tmp"
  exec {lock}>&-
  log "built $tool in $(( $(date +%s) - t0 )) s"
}

for t in "${tools[@]}"; do
  case $t in
    helm)
      install helm "$HELM_VERSION" helm.sh/helm/v4/cmd/helm \
        -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" ;;
    promtool)
      # remove_all_sd leaves out the service-discovery plugins promtool
      # never needs for checking and testing rules.
      install promtool "$PROMETHEUS_VERSION" github.com/prometheus/prometheus/cmd/promtool \
        -tags remove_all_sd -ldflags "-s -w" ;;
    *) log "unknown tool $t"; exit 2 ;;
  esac
done
