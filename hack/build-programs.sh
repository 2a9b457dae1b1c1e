#!/usr/bin/env bash
# Build, once per version, the programs Herald's tests run that are not
# Herald, from the Go module proxy at the versions in hack/versions.env:
#   etcd; kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
#   kube-proxy, kubectl (k8s.io/kubernetes); helm (helm.sh/helm/v4);
#   promtool and prometheus (the Prometheus module); metallb-controller and
#   metallb-speaker (go.universe.tf/metallb, for e2e/metallb; packaged by
#   hack/build-metallb.sh).
#
# All but etcd come from one wrapper module, built by one `go build`: the
# go command then compiles each package they share once. Built from their
# own modules, helm, promtool and MetalLB compiled their own copies of
# client-go, apimachinery, gRPC and the rest, and the four together
# compiled 268 MB of Go source; in one module they compile 124 MB, and a
# cold `make test` spent most of its first 25 minutes there. The versions
# are then the highest any of them requires (k8s.io/* at the control
# plane's, for instance, where helm and MetalLB asked for v0.37.1): these
# are test fixtures, not what Herald ships. etcd stays in its own module:
# Kubernetes requires etcd's v3.7 server module, and the lab runs
# ETCD_VERSION.
#
# k8s.io/kubernetes cannot be `go install`ed (its go.mod replaces every
# staging module with ./staging/...): the wrapper pins each staging module
# to the matching v0.x.y. MetalLB v0.16.2 requires
# github.com/metallb/frr-k8s v0.0.27, which the module proxy does not serve
# (403); its code uses frr-k8s only for the FRR-K8s mode's API types, so
# the wrapper replaces it with a copy of v0.0.21 plus the one type and
# field v0.16.2 refers to (Advertise.PrefixesWithAsPathPrepend). MetalLB's
# native L2 and BGP code paths are its own, unchanged.
#
# Binaries land in $HERALD_CACHE/bin/<program>-<version>; an existing
# binary is never rebuilt. One build at a time (a lock): a test that needs
# a missing program runs this script and waits for a build already under
# way. A cold build of everything takes about 15 minutes on 2 cores.
#
# Usage: hack/build-programs.sh [program...|control-plane|tools|all]
#   control-plane: etcd and the Kubernetes components (the default)
#   tools: helm, promtool and prometheus; all: every program above
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"

HERALD_CACHE=${HERALD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/herald}
BIN=$HERALD_CACHE/bin
SRC=$HERALD_CACHE/src
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOWORK=off GOTOOLCHAIN=local
mkdir -p "$BIN" "$SRC"

log() { printf '[programs] %s\n' "$*" >&2; }

# fetch runs a go command that downloads modules (go get, go mod tidy, go
# list) with more downloads at a time than its default, GOMAXPROCS: on 2
# cores it fetches two modules at once, and from a slow module proxy the
# download, not the compile, is then most of the wait (docs/benchmarks.md).
FETCH_PARALLEL=${HERALD_FETCH_PARALLEL:-16}
fetch() { GOMAXPROCS=$FETCH_PARALLEL "$@"; }

k8s_components=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)

# version and package of each program built from the wrapper module
version_of() {
  case $1 in
    kube-*|kubelet|kubectl) echo "$KUBERNETES_VERSION" ;;
    helm) echo "$HELM_VERSION" ;;
    promtool|prometheus) echo "$PROMETHEUS_VERSION" ;;
    metallb-*) echo "$METALLB_VERSION" ;;
    etcd) echo "$ETCD_VERSION" ;;
  esac
}
package_of() {
  case $1 in
    kube-*|kubelet|kubectl) echo "k8s.io/kubernetes/cmd/$1" ;;
    helm) echo helm.sh/helm/v4/cmd/helm ;;
    promtool) echo github.com/prometheus/prometheus/cmd/promtool ;;
    prometheus) echo github.com/prometheus/prometheus/cmd/prometheus ;;
    metallb-controller) echo go.universe.tf/metallb/controller ;;
    metallb-speaker) echo go.universe.tf/metallb/speaker ;;
  esac
}
out_of() { echo "$BIN/$1-$(version_of "$1")"; }

# herald_client_modules prints a require block of the modules Herald's
# client-go code is built from, at Herald's versions (go.mod). The wrapper
# then builds client-go, k8s.io/api and apimachinery from exactly the
# modules Herald's own builds use, and with the same flags (-trimpath,
# CGO off) the go command compiles those packages once for both.
herald_client_modules() {
  local mods
  mods=$(cd "$here/.." && fetch go list -deps -f '{{with .Module}}{{.Path}} {{.Version}}{{end}}' \
    k8s.io/client-go/kubernetes k8s.io/client-go/informers k8s.io/client-go/tools/cache \
    k8s.io/client-go/tools/leaderelection k8s.io/client-go/tools/record 2>/dev/null | sort -u) || return 0
  [ -n "$mods" ] || return 0
  echo "require ("
  printf '%s\n' "$mods" | sed 's/^/\t/'
  echo ")"
  echo
}

moddir() { go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'; }

# frr_k8s_shim prints the directory of frr-k8s METALLB_FRR_K8S_VERSION plus
# what MetalLB v0.16.2 uses of v0.0.27, writing it the first time.
frr_k8s_shim() {
  local frr=$SRC/frr-k8s-$METALLB_FRR_K8S_VERSION-shim types
  if [ ! -f "$frr/go.mod" ]; then
    log "frr-k8s $METALLB_FRR_K8S_VERSION with v0.0.27's AsPathPrependPrefixes"
    rm -rf "$frr"
    cp -r "$(cd / && moddir "github.com/metallb/frr-k8s@$METALLB_FRR_K8S_VERSION")" "$frr.tmp"
    chmod -R u+w "$frr.tmp"
    types=$frr.tmp/api/v1beta1/frrconfiguration_types.go
    sed -i 's|^\(\s*PrefixesWithCommunity \[\]CommunityPrefixes `json:"withCommunity,omitempty"`\)$|\1\n\n\tPrefixesWithAsPathPrepend []AsPathPrependPrefixes `json:"withASPathPrepend,omitempty"`|' "$types"
    grep -q PrefixesWithAsPathPrepend "$types" || { log "could not patch $types"; exit 1; }
    cat >"$frr.tmp/api/v1beta1/aspathprepend_shim.go" <<'GO'
package v1beta1

// AsPathPrependPrefixes is frr-k8s v0.0.27's type, added for MetalLB
// v0.16.2 to compile (hack/build-programs.sh).
type AsPathPrependPrefixes struct {
	AsPathPrepend uint8    `json:"asPathPrepend,omitempty"`
	Prefixes      []string `json:"prefixes,omitempty"`
}
GO
    mv "$frr.tmp" "$frr"
  fi
  echo "$frr"
}

# wrapper prints the wrapper module's directory, named by every version in
# it, writing it the first time.
wrapper() {
  local key dir minor patch staging_version modfile frr m client
  key=k8s-$KUBERNETES_VERSION-helm-$HELM_VERSION-prometheus-$PROMETHEUS_VERSION-metallb-$METALLB_VERSION-frrk8s-$METALLB_FRR_K8S_VERSION
  dir=$SRC/programs-$(printf '%s' "$key" | sha256sum | cut -c1-12)
  if [ -f "$dir/go.sum" ] && [ -f "$dir/.complete" ]; then
    echo "$dir"
    return 0
  fi
  log "writing the wrapper module $dir ($key; downloads ~1.5 GB of modules the first time)"
  rm -rf "$dir"
  mkdir -p "$dir"
  frr=$(frr_k8s_shim)
  minor=${KUBERNETES_VERSION#v1.}; minor=${minor%%.*}
  patch=${KUBERNETES_VERSION##*.}
  staging_version=v0.$minor.$patch
  modfile=$(cd / && go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  client=$(herald_client_modules)
  {
    echo "module heraldlab/programs"
    echo
    echo "go $(sed -n 's/^go \([0-9.]*\)$/\1/p' "$modfile")"
    echo
    echo "// $key"
    echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
    echo
    [ -z "$client" ] || printf '%s\n\n' "$client"
    echo "replace ("
    for m in $(sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$modfile"); do
      # sample-* staging modules are not published and no binary needs them
      case $m in k8s.io/sample-*) continue ;; esac
      echo "	$m => $m $staging_version"
    done
    echo "	github.com/metallb/frr-k8s => $frr"
    echo ")"
  } >"$dir/go.mod"
  {
    printf '//go:build tools\n\n// Package tools names what hack/build-programs.sh builds.\npackage tools\n\nimport (\n'
    for p in "${k8s_components[@]}" helm promtool prometheus metallb-controller metallb-speaker; do
      printf '\t_ "%s"\n' "$(package_of "$p")"
    done
    printf ')\n'
  } >"$dir/tools.go"
  # go get (not go mod tidy, which also resolves the imports of these
  # modules' tests) settles every version: the highest any of them needs.
  # MetalLB pins github.com/mdlayher/packet v1.0.0, written against
  # mdlayher/socket v0.2; Kubernetes requires socket v0.6.1, whose API
  # packet v1.1.2 (a minor release of the same package) is written for.
  local out
  if ! out=$(cd "$dir" && fetch go get "k8s.io/kubernetes@$KUBERNETES_VERSION" "helm.sh/helm/v4@$HELM_VERSION" \
    "github.com/prometheus/prometheus@$PROMETHEUS_VERSION" "go.universe.tf/metallb@$METALLB_VERSION" \
    github.com/mdlayher/packet@v1.1.2 2>&1); then
    printf '%s\n' "$out" >&2
    log "go get in $dir failed"
    exit 1
  fi
  herald_lags "$dir" "$client"
  touch "$dir/.complete"
  echo "$dir"
}

# herald_lags DIR REQUIRES logs the modules of REQUIRES (what
# herald_client_modules printed) that the wrapper in DIR resolved to a
# newer version than Herald's go.mod has: client-go then compiles twice on
# a fresh machine, once for Herald and once here.
herald_lags() {
  local m v w
  while read -r m v; do
    [ "$m" = require ] || [ "$m" = ")" ] || [ -z "$m" ] && continue
    w=$(cd "$1" && go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' "$m" 2>/dev/null) || continue
    [ "$w" = "$v" ] || log "Herald's go.mod has $m $v, the programs need $w: go get $m@$w in Herald shares client-go's compile"
  done <<<"$2"
}

# build_wrapped PROGRAM... builds those from the wrapper module in one go
# build (whose binaries are named after their package's last element:
# metallb's controller and speaker are renamed on the way out).
build_wrapped() {
  local dir tmp ld minor t0 p pkgs=()
  dir=$(wrapper)
  minor=${KUBERNETES_VERSION#v1.}; minor=${minor%%.*}
  ld="-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=$KUBERNETES_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  for p in "$@"; do pkgs+=("$(package_of "$p")"); done
  tmp=$(mktemp -d "$BIN/.build.XXXXXX")
  log "building $* (cold, everything: about 15 minutes on 2 cores; cached afterwards in $BIN)"
  t0=$(date +%s)
  # remove_all_sd leaves out the service-discovery plugins: promtool never
  # needs them for checking and testing rules, and e2e/helm's prometheus
  # scrapes static targets (built in); nothing else has that tag.
  (cd "$dir" && GOFLAGS="$GOFLAGS -mod=mod" go build -trimpath -tags remove_all_sd -ldflags "$ld" -o "$tmp/" "${pkgs[@]}") ||
    { rm -rf "$tmp"; exit 1; }
  for p in "$@"; do
    case $p in
      metallb-*) mv "$tmp/${p#metallb-}" "$(out_of "$p")" ;;
      *) mv "$tmp/$p" "$(out_of "$p")" ;;
    esac
  done
  rm -rf "$tmp"
  log "built $* in $(( $(date +%s) - t0 )) s"
}

# prefetch_wrapped PROGRAM... writes the wrapper module and downloads
# every module those programs are built from, many at a time (fetch): go
# build would fetch them two at a time as it finds them.
prefetch_wrapped() {
  local dir p pkgs=()
  dir=$(wrapper)
  for p in "$@"; do pkgs+=("$(package_of "$p")"); done
  (cd "$dir" && GOFLAGS="$GOFLAGS -mod=mod" fetch go list -deps -tags remove_all_sd "${pkgs[@]}" >/dev/null)
}

build_etcd() {
  local out dir=$SRC/etcd-$ETCD_VERSION t0
  out=$(out_of etcd)
  mkdir -p "$dir"
  if [ ! -f "$dir/go.sum" ]; then
    printf 'package main\n\nimport (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\nfunc main() { etcdmain.Main(os.Args) }\n' >"$dir/main.go"
    printf 'module heraldlab/etcd\n\ngo 1.25\n' >"$dir/go.mod"
    (cd "$dir" && fetch go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" && fetch go mod tidy)
  fi
  (cd "$dir" && fetch go list -deps . >/dev/null)
  log "building etcd $ETCD_VERSION"
  t0=$(date +%s)
  (cd "$dir" && go build -trimpath -ldflags "-s -w" -o "$out.tmp" .)
  mv "$out.tmp" "$out"
  log "built etcd in $(( $(date +%s) - t0 )) s"
}

# huge_pages_while_building turns transparent huge pages from madvise (or
# never) to always for the rest of this script, when HERALD_BUILD_THP is
# always (the Makefile's program targets set it; a test that builds a
# missing program does not) and this runs as root, and puts the machine's
# mode back when it exits. The compiler's heap is new memory in every
# process, and where a page fault is expensive (a VM) small pages make it
# spend a quarter of its CPU time in the kernel; with huge pages a build
# takes about a third less CPU time (docs/benchmarks.md). Only the build
# runs so, not the tests. A build killed
# before it could restore the mode leaves it in $BIN/.thp-was, which the
# next run puts back first.
thp=/sys/kernel/mm/transparent_hugepage/enabled
huge_pages_while_building() {
  local was
  if [ -f "$BIN/.thp-was" ]; then
    cat "$BIN/.thp-was" >"$thp" 2>/dev/null || true
    rm -f "$BIN/.thp-was"
  fi
  [ "${HERALD_BUILD_THP:-}" = always ] && [ -w "$thp" ] || return 0
  was=$(sed -n 's/.*\[\([a-z]*\)\].*/\1/p' "$thp")
  [ -n "$was" ] && [ "$was" != always ] || return 0
  echo "$was" >"$BIN/.thp-was"
  echo always >"$thp" || { rm -f "$BIN/.thp-was"; return 0; }
  # shellcheck disable=SC2064 # the mode to put back, as it is now
  trap "echo $was >$thp; rm -f '$BIN/.thp-was'" EXIT
  trap 'exit 130' INT TERM
  log "transparent huge pages: always while building (was $was; put back when done)"
}

programs=()
for a in "${@:-control-plane}"; do
  case $a in
    control-plane) programs+=(etcd "${k8s_components[@]}") ;;
    tools) programs+=(helm promtool prometheus) ;;
    all) programs+=(etcd "${k8s_components[@]}" helm promtool prometheus metallb-controller metallb-speaker) ;;
    *)
      [ -n "$(version_of "$a")" ] || { log "unknown program $a"; exit 2; }
      programs+=("$a") ;;
  esac
done

missing() {
  local p
  for p in "${programs[@]}"; do [ -x "$(out_of "$p")" ] || echo "$p"; done
}
[ -n "$(missing)" ] || exit 0
exec {lock}>"$BIN/.programs.lock"
flock "$lock"
huge_pages_while_building
todo=()
while read -r p; do [ -n "$p" ] && todo+=("$p"); done < <(missing)
wrapped=() etcd=false
for p in "${todo[@]}"; do
  if [ "$p" = etcd ]; then etcd=true; else wrapped+=("$p"); fi
done
if [ ${#wrapped[@]} -gt 0 ]; then
  # etcd compiles while the wrapper's modules download: on a fresh
  # machine that is mostly waiting on the network.
  prefetch_wrapped "${wrapped[@]}" &
  prep=$!
  if $etcd; then build_etcd; fi
  wait "$prep" || { log "downloading the wrapper module's modules failed"; exit 1; }
  build_wrapped "${wrapped[@]}"
elif $etcd; then
  build_etcd
fi
