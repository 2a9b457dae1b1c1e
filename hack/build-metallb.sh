#!/usr/bin/env bash
# Build, once per version, MetalLB's controller and speaker from the Go
# module proxy (go.universe.tf/metallb at METALLB_VERSION, hack/versions.env)
# and package them as the images its manifest names
# (quay.io/metallb/controller:<version>, quay.io/metallb/speaker:<version>),
# without a container engine, the way hack/images packages Herald's. The
# e2e/metallb test imports them into the lab's nodes and applies MetalLB's
# own config/manifests/metallb-native.yaml.
#
# MetalLB v0.16.2 requires github.com/metallb/frr-k8s v0.0.27, which the
# module proxy does not serve (403). Its code uses frr-k8s only for the
# FRR-K8s mode's API types; the wrapper module replaces it with a copy of
# v0.0.21 plus the one type and field v0.16.2 refers to
# (Advertise.PrefixesWithAsPathPrepend). The native (L2, and MetalLB's own
# BGP) code paths are MetalLB's unchanged.
#
# Output in $HERALD_CACHE/metallb-<version>/: controller, speaker (static
# binaries), images/{controller,speaker}.tar, metallb-native.yaml. An
# existing output is never rebuilt. Prints the directory.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=versions.env
. "$here/versions.env"

HERALD_CACHE=${HERALD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/herald}
OUT=$HERALD_CACHE/metallb-$METALLB_VERSION
SRC=$HERALD_CACHE/src/metallb-$METALLB_VERSION
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOWORK=off GOTOOLCHAIN=local

log() { printf '[metallb] %s\n' "$*" >&2; }

built() { [ -f "$OUT/images/controller.tar" ] && [ -f "$OUT/images/speaker.tar" ] && [ -f "$OUT/metallb-native.yaml" ]; }
if built; then
  echo "$OUT"
  exit 0
fi
# One build at a time: `make test` builds MetalLB beside the tests, and
# e2e/metallb, when it gets here first, waits for that build.
mkdir -p "$HERALD_CACHE"
exec 9>"$HERALD_CACHE/.metallb-$METALLB_VERSION.lock"
flock 9
if built; then
  echo "$OUT"
  exit 0
fi
mkdir -p "$OUT" "$SRC"

moddir() { go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'; }

# frr-k8s API shim: v0.0.21 plus what v0.16.2 uses of v0.0.27.
frr=$SRC/frr-k8s
if [ ! -f "$frr/go.mod" ]; then
  log "frr-k8s $METALLB_FRR_K8S_VERSION with v0.0.27's AsPathPrependPrefixes"
  rm -rf "$frr"
  cp -r "$(cd "$SRC" && moddir "github.com/metallb/frr-k8s@$METALLB_FRR_K8S_VERSION")" "$frr"
  chmod -R u+w "$frr"
  types=$frr/api/v1beta1/frrconfiguration_types.go
  sed -i 's|^\(\s*PrefixesWithCommunity \[\]CommunityPrefixes `json:"withCommunity,omitempty"`\)$|\1\n\n\tPrefixesWithAsPathPrepend []AsPathPrependPrefixes `json:"withASPathPrepend,omitempty"`|' "$types"
  grep -q PrefixesWithAsPathPrepend "$types" || { log "could not patch $types"; exit 1; }
  cat > "$frr/api/v1beta1/aspathprepend_shim.go" <<'GO'
package v1beta1

// AsPathPrependPrefixes is frr-k8s v0.0.27's type, added for MetalLB
// v0.16.2 to compile (hack/build-metallb.sh).
type AsPathPrependPrefixes struct {
	AsPathPrepend uint8    `json:"asPathPrepend,omitempty"`
	Prefixes      []string `json:"prefixes,omitempty"`
}
GO
fi

wrap=$SRC/build
mkdir -p "$wrap"
cat > "$wrap/go.mod" <<GOMOD
module herald.dev/metallb-build

go 1.26.0

require go.universe.tf/metallb $METALLB_VERSION

replace github.com/metallb/frr-k8s => $frr
GOMOD
cat > "$wrap/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "go.universe.tf/metallb/controller"
	_ "go.universe.tf/metallb/speaker"
)
GO
log "building controller and speaker $METALLB_VERSION (a cold build takes a few minutes)"
mkdir -p "$OUT/linux-amd64"
(cd "$wrap" && GOFLAGS=-mod=mod GOARCH=amd64 go build -trimpath -ldflags='-s -w' -o "$OUT/linux-amd64/" go.universe.tf/metallb/controller go.universe.tf/metallb/speaker)
cp "$(cd "$wrap" && GOFLAGS=-mod=mod moddir "go.universe.tf/metallb@$METALLB_VERSION")/config/manifests/metallb-native.yaml" "$OUT/metallb-native.yaml"
chmod u+w "$OUT/metallb-native.yaml"
# distroless/static's user is root: the speaker needs its NET_RAW as root.
(cd "$root" && go run ./hack/images -bin "$OUT" -out "$OUT/images" -repo quay.io/metallb -tag "$METALLB_VERSION" -user 0:0 \
  -arch amd64 -images controller,speaker -source https://github.com/metallb/metallb >&2)
echo "$OUT"
