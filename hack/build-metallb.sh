#!/usr/bin/env bash
# Build, once per version, MetalLB's controller and speaker from the Go
# module proxy (go.universe.tf/metallb at METALLB_VERSION, hack/versions.env)
# and package them as the images its manifest names
# (quay.io/metallb/controller:<version>, quay.io/metallb/speaker:<version>),
# without a container engine, the way hack/images packages Herald's. The
# e2e/metallb test imports them into the lab's nodes and applies MetalLB's
# own config/manifests/metallb-native.yaml.
#
# The binaries come from hack/build-programs.sh (metallb-controller,
# metallb-speaker), which says how MetalLB v0.16.2 compiles without the
# frr-k8s v0.0.27 the module proxy does not serve.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=versions.env
. "$here/versions.env"

HERALD_CACHE=${HERALD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/herald}
OUT=$HERALD_CACHE/metallb-$METALLB_VERSION
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOWORK=off GOTOOLCHAIN=local


built() { [ -f "$OUT/images/controller.tar" ] && [ -f "$OUT/images/speaker.tar" ] && [ -f "$OUT/metallb-native.yaml" ]; }
if built; then
  echo "$OUT"
  exit 0
fi
# One build at a time: e2e/metallb runs this script too, and waits for a
# build already under way.
mkdir -p "$HERALD_CACHE"
exec 9>"$HERALD_CACHE/.metallb-$METALLB_VERSION.lock"
flock 9
if built; then
  echo "$OUT"
  exit 0
fi
mkdir -p "$OUT"

moddir() { go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'; }

"$here/build-programs.sh" metallb-controller metallb-speaker
mkdir -p "$OUT/linux-amd64"
cp "$HERALD_CACHE/bin/metallb-controller-$METALLB_VERSION" "$OUT/linux-amd64/controller"
cp "$HERALD_CACHE/bin/metallb-speaker-$METALLB_VERSION" "$OUT/linux-amd64/speaker"
cp "$(cd / && moddir "go.universe.tf/metallb@$METALLB_VERSION")/config/manifests/metallb-native.yaml" "$OUT/metallb-native.yaml"
chmod u+w "$OUT/metallb-native.yaml"
# distroless/static's user is root: the speaker needs its NET_RAW as root.
(cd "$root" && go run ./hack/images -bin "$OUT" -out "$OUT/images" -repo quay.io/metallb -tag "$METALLB_VERSION" -user 0:0 \
  -arch amd64 -images controller,speaker -source https://github.com/metallb/metallb >&2)
echo "$OUT"
