#!/usr/bin/env bash
# Regenerate everything derived from api/v1beta1: deepcopy and CRD YAML
# (controller-gen), typed clientset, listers, informers and apply
# configurations (k8s.io/code-generator). Generator versions are pinned in
# go.mod's tool directive.
#
# Usage: hack/update-codegen.sh   (hack/verify.sh checks the checked-in output)
#
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root
cd "$root"
# the flags every go command of the project shares (hack/build.env)
set -a; . hack/build.env; set +a

mod=github.com/herald-lb/herald
gen=$mod/api/generated
hdr=$root/hack/boilerplate.go.txt

go tool controller-gen object:headerFile="$hdr" paths=./api/... output:dir="$out/api/v1beta1"
rm -rf "$out/manifests/crds" && mkdir -p "$out/manifests/crds"
go tool controller-gen crd:allowDangerousTypes=false paths=./api/... output:crd:artifacts:config="$out/manifests/crds"

rm -rf "$out/api/generated"
go tool applyconfiguration-gen --go-header-file "$hdr" \
  --output-dir "$out/api/generated/applyconfiguration" --output-pkg "$gen/applyconfiguration" \
  ./api/v1beta1
go tool client-gen --go-header-file "$hdr" --clientset-name versioned --input-base "" \
  --input "$mod/api/v1beta1" \
  --output-dir "$out/api/generated/clientset" --output-pkg "$gen/clientset" \
  --apply-configuration-package "$gen/applyconfiguration"
go tool lister-gen --go-header-file "$hdr" \
  --output-dir "$out/api/generated/listers" --output-pkg "$gen/listers" ./api/v1beta1
go tool informer-gen --go-header-file "$hdr" \
  --versioned-clientset-package "$gen/clientset/versioned" --listers-package "$gen/listers" \
  --output-dir "$out/api/generated/informers" --output-pkg "$gen/informers" ./api/v1beta1
