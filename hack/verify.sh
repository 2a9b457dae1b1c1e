#!/usr/bin/env bash
# Fail when something checked in is stale or unclean:
#   - gofmt, go vet and staticcheck (pinned in go.mod's tool directive,
#     configured in staticcheck.conf);
#   - a hand-written Go file over 500 lines (split it by responsibility);
#   - go.mod/go.sum not tidy;
#   - generated code and CRDs (hack/update-codegen.sh run on a scratch copy
#     of the tree must reproduce them byte for byte);
#   - the manifests rendered from the Helm chart (hack/render-manifests.sh:
#     manifests/*.yaml and charts/herald/crds/), one source of truth.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# the flags every go command of the project shares (hack/build.env)
set -a; . hack/build.env; set +a
fail=0
say() { printf '[verify] %s\n' "$*" >&2; }

unformatted=$(gofmt -l $(git ls-files --cached --others --exclude-standard '*.go') 2>/dev/null || true)
if [ -n "$unformatted" ]; then
  say "gofmt wants changes in:"; echo "$unformatted" >&2; fail=1
fi

say "go vet ./..."
go vet ./... || fail=1

# The generated client is not ours to lint: it is regenerated as
# code-generator writes it (and uses client-go's deprecated ListFunc).
say "staticcheck"
go tool staticcheck $(go list ./... | grep -v '/api/generated/') || fail=1

# Generated files (zz_generated*, api/generated/, and any file with the
# standard "Code generated ... DO NOT EDIT." line) may be long.
say "Go files over 500 lines"
long=$(git ls-files --cached --others --exclude-standard '*.go' | while read -r f; do
  case $f in api/generated/*|*/zz_generated*|zz_generated*) continue ;; esac
  [ -f "$f" ] || continue
  grep -qm1 '^// Code generated .* DO NOT EDIT\.$' "$f" && continue
  n=$(wc -l <"$f")
  [ "$n" -gt 500 ] && echo "$n $f"
done || true)
if [ -n "$long" ]; then
  say "hand-written Go files over 500 lines; split them by responsibility:"; echo "$long" >&2; fail=1
fi

say "go mod tidy -diff"
if ! go mod tidy -diff >/tmp/herald-tidy.diff 2>&1; then
  say "go.mod/go.sum are not tidy (run go mod tidy):"; head -40 /tmp/herald-tidy.diff >&2; fail=1
fi

say "regenerating into a scratch copy"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
tar --exclude=./.git --exclude=./bin -cf - . | tar -xf - -C "$scratch"
(cd "$scratch" && hack/update-codegen.sh) >/dev/null
if [ -x hack/render-manifests.sh ]; then
  (cd "$scratch" && hack/render-manifests.sh) >/dev/null
fi
# The CRDs, the client, and everything rendered from the chart
# (manifests/, the chart's crds/ copy).
for p in api manifests charts/herald/crds; do
  if ! diff -r -q "$p" "$scratch/$p" >/dev/null; then
    say "$p is stale; run make generate. Differences:"
    diff -r "$p" "$scratch/$p" | head -40 >&2 || true
    fail=1
  fi
done
[ $fail = 0 ] && say "all checks passed"
exit $fail
