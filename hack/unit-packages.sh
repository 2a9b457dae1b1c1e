#!/usr/bin/env bash
# Lists the packages `make unit` tests, split by what they need:
#   lab   packages whose tests build network namespaces (they import
#         test/labkit or vishvananda/netns): timing-sensitive, so they
#         run before the end-to-end lab, not beside it;
#   api   the others (a real kube-apiserver at most), which run beside the
#         end-to-end tests;
#   race  the controller and speaker packages, run with -race (a subset of
#         api's side, listed apart so that api leaves them out).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
race='/internal/controller|/internal/speaker|/herald/controller|/herald/speaker'
all() {
	"$GO" list -f '{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}' \
		./api/... ./internal/... ./test/... ./hack/... ./kubectl-herald/... ./controller/... ./speaker/...
}
case "${1:-}" in
lab) all | awk '/herald\/test\/labkit|vishvananda\/netns/ {print $1}' | grep -Ev "($race)(/|$)" ;;
api) all | awk '!/herald\/test\/labkit|vishvananda\/netns/ {print $1}' | grep -Ev "($race)(/|$)" ;;
race) all | awk '{print $1}' | grep -E "($race)(/|$)" ;;
*) echo "usage: $0 lab|api|race" >&2; exit 2 ;;
esac
