#!/usr/bin/env bash
# Print the directory holding the Prometheus Operator's monitoring.coreos.com
# CRDs (ServiceMonitor, PodMonitor, PrometheusRule and the rest) at
# PROMETHEUS_OPERATOR_VERSION (hack/versions.env), generating them the
# first time into $HERALD_CACHE/crds/prometheus-operator-<version>.
#
# The module proxy serves the operator's API module
# (github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring)
# but not its main module, the one with the rendered YAML
# (example/prometheus-operator-crd-full). Those files are controller-gen's
# output for the API module's types, so this runs controller-gen (Herald's,
# pinned in go.mod) on the same types: the schema the API server enforces
# is the operator's, from its own markers. Only the module cache is used,
# like hack/build-programs.sh.
#
# Usage: hack/prometheus-operator-crds.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"

HERALD_CACHE=${HERALD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/herald}
module=github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring
out=$HERALD_CACHE/crds/prometheus-operator-$PROMETHEUS_OPERATOR_VERSION
if [ -f "$out/.complete" ]; then
  echo "$out"
  exit 0
fi
export GOWORK=off GOTOOLCHAIN=local
mkdir -p "$HERALD_CACHE/crds"
exec {lock}>"$HERALD_CACHE/crds/.lock"
flock "$lock"
if [ ! -f "$out/.complete" ]; then
  src=$(cd / && go mod download -json "$module@$PROMETHEUS_OPERATOR_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$src" ] || { echo "prometheus-operator-crds: $module@$PROMETHEUS_OPERATOR_VERSION not downloaded" >&2; exit 1; }
  # a writable copy: go resolves the module's own requirements in it
  work=$(mktemp -d "$HERALD_CACHE/crds/.work.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  cp -r "$src/." "$work/"
  chmod -R u+w "$work"
  rm -rf "$out.tmp"
  mkdir -p "$out.tmp"
  # controller-gen built in Herald's module (its pinned version), run in
  # the copy, where -mod=mod lets go record what the types import
  gen=$(cd "$here/.." && go tool -n controller-gen)
  (cd "$work" && GOFLAGS=-mod=mod go list ./v1 >/dev/null)
  (cd "$work" && GOFLAGS=-mod=mod "$gen" crd:crdVersions=v1 paths=./v1 output:crd:dir="$out.tmp")
  touch "$out.tmp/.complete"
  rm -rf "$out"
  mv "$out.tmp" "$out"
fi
echo "$out"
