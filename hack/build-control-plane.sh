#!/usr/bin/env bash
# Build, once per version, the Kubernetes control-plane binaries Herald's tests
# run for real: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# kubelet, kube-proxy and kubectl, from the Go module proxy.
#
# k8s.io/kubernetes cannot be `go install`ed (its go.mod replaces every staging
# module with ./staging/...). A wrapper module that requires it and pins each
# staging module to the matching v0.x.y builds ./cmd/... from the module cache.
#
# Binaries land in $HERALD_CACHE/bin/<component>-<version>; an existing binary
# is never rebuilt. A cold build takes 10-20 minutes on 2 cores, later runs
# take no time at all.
#
# Usage: hack/build-control-plane.sh [component...]
#   components: etcd kube-apiserver kube-controller-manager kube-scheduler
#               kubelet kube-proxy kubectl (default: all of them)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"

HERALD_CACHE=${HERALD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/herald}
BIN=$HERALD_CACHE/bin
SRC=$HERALD_CACHE/src
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOWORK=off
mkdir -p "$BIN" "$SRC"

components=("$@")
[ ${#components[@]} -gt 0 ] || components=(etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)

log() { printf '[control-plane] %s\n' "$*" >&2; }

# herald_client_modules prints a require block of the modules Herald's
# client-go code is built from, at Herald's versions (go.mod). Kubernetes
# then builds client-go, k8s.io/api and apimachinery from exactly the
# modules Herald's own builds use, and with the same flags (-trimpath,
# CGO off) the go command compiles those packages once for both: on a
# fresh machine, minutes of compiling fewer. Herald's versions are the
# same or newer patch/minor releases (go mod tidy keeps the higher of the
# two); the binaries are test fixtures, not what Herald ships.
herald_client_modules() {
  local mods
  mods=$(cd "$here/.." && go list -deps -f '{{with .Module}}{{.Path}} {{.Version}}{{end}}' \
    k8s.io/client-go/kubernetes k8s.io/client-go/informers k8s.io/client-go/tools/cache \
    k8s.io/client-go/tools/leaderelection k8s.io/client-go/tools/record 2>/dev/null | sort -u) || return 0
  [ -n "$mods" ] || return 0
  echo "require ("
  printf '%s\n' "$mods" | sed 's/^/\t/'
  echo ")"
  echo
}

k8s_wrapper() {
  local dir=$SRC/k8s-$KUBERNETES_VERSION minor patch staging_version modfile
  minor=${KUBERNETES_VERSION#v1.}; minor=${minor%%.*}
  patch=${KUBERNETES_VERSION##*.}
  staging_version=v0.$minor.$patch
  mkdir -p "$dir"
  if [ ! -f "$dir/go.sum" ]; then
    log "writing a wrapper module for k8s.io/kubernetes $KUBERNETES_VERSION (downloads ~1 GB of modules)"
    modfile=$(cd / && go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    {
      echo "module heraldlab/k8s"
      echo
      echo "go $(sed -n 's/^go \([0-9.]*\)$/\1/p' "$modfile")"
      echo
      echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
      echo
      herald_client_modules
      echo "replace ("
      for m in $(sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$modfile"); do
        # sample-* staging modules are not published and no binary needs them
        case $m in k8s.io/sample-*) continue ;; esac
        echo "	$m => $m $staging_version"
      done
      echo ")"
    } >"$dir/go.mod"
  fi
  local tools
  tools=$(printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "k8s.io/kubernetes/cmd/kube-apiserver"\n\t_ "k8s.io/kubernetes/cmd/kube-controller-manager"\n\t_ "k8s.io/kubernetes/cmd/kube-proxy"\n\t_ "k8s.io/kubernetes/cmd/kube-scheduler"\n\t_ "k8s.io/kubernetes/cmd/kubectl"\n\t_ "k8s.io/kubernetes/cmd/kubelet"\n)\n')
  if [ "$(cat "$dir/tools.go" 2>/dev/null)" != "$tools" ] || [ ! -f "$dir/go.sum" ]; then
    printf '%s\n' "$tools" >"$dir/tools.go"
    (cd "$dir" && go mod tidy)
  fi
  echo "$dir"
}

build_k8s() {
  local c=$1 out=$BIN/$1-$KUBERNETES_VERSION dir ld minor t0
  [ -x "$out" ] && return 0
  dir=$(k8s_wrapper)
  minor=${KUBERNETES_VERSION#v1.}; minor=${minor%%.*}
  ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=$KUBERNETES_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  log "building $c $KUBERNETES_VERSION (cold: several minutes; cached afterwards in $BIN)"
  t0=$(date +%s)
  (cd "$dir" && go build -trimpath -ldflags "$ld" -o "$out.tmp" "k8s.io/kubernetes/cmd/$c")
  mv "$out.tmp" "$out"
  log "built $c in $(( $(date +%s) - t0 )) s"
}

build_etcd() {
  local out=$BIN/etcd-$ETCD_VERSION dir=$SRC/etcd-$ETCD_VERSION t0
  [ -x "$out" ] && return 0
  mkdir -p "$dir"
  if [ ! -f "$dir/go.sum" ]; then
    printf 'package main\n\nimport (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\nfunc main() { etcdmain.Main(os.Args) }\n' >"$dir/main.go"
    printf 'module heraldlab/etcd\n\ngo 1.25\n' >"$dir/go.mod"
    (cd "$dir" && go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" && go mod tidy)
  fi
  log "building etcd $ETCD_VERSION"
  t0=$(date +%s)
  (cd "$dir" && go build -trimpath -ldflags "-s -w" -o "$out.tmp" .)
  mv "$out.tmp" "$out"
  log "built etcd in $(( $(date +%s) - t0 )) s"
}

for c in "${components[@]}"; do
  case $c in
    etcd) build_etcd ;;
    kube-apiserver|kube-controller-manager|kube-scheduler|kubelet|kube-proxy|kubectl) build_k8s "$c" ;;
    *) log "unknown component $c"; exit 2 ;;
  esac
done
