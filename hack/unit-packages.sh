#!/usr/bin/env bash
# Lists the packages `make unit` tests, split by what they need:
#   lab   packages whose tests build network namespaces (they import
#         test/labkit or vishvananda/netns): timing-sensitive, so they
#         run before the end-to-end lab, not beside it;
#   api   the others (a real kube-apiserver at most), which run beside the
#         end-to-end tests;
#   race  the controller and speaker packages and the pure L2 ownership
#         machine, run with -race (a subset of api's side, listed apart so
#         that api leaves them out);
#   race-lab  the member list, lab-side and run with -race (listed apart
#         so that lab leaves it out).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
race='/internal/controller|/internal/speaker|/internal/l2owner|/herald/controller|/herald/speaker'
racelab='/internal/members'
all() {
	"$GO" list -f '{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}' \
		./api/... ./internal/... ./test/... ./hack/... ./kubectl-herald/... ./controller/... ./speaker/...
}
case "${1:-}" in
lab) all | awk '/herald\/test\/labkit|vishvananda\/netns/ {print $1}' | grep -Ev "($race|$racelab)(/|$)" ;;
api) all | awk '!/herald\/test\/labkit|vishvananda\/netns/ {print $1}' | grep -Ev "($race)(/|$)" ;;
race) all | awk '{print $1}' | grep -E "($race)(/|$)" ;;
race-lab) all | awk '{print $1}' | grep -E "($racelab)(/|$)" ;;
*) echo "usage: $0 lab|api|race|race-lab" >&2; exit 2 ;;
esac
