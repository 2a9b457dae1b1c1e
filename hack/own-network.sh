#!/bin/sh
# own-network.sh runs a command (a test binary: `go test -exec`) in a new
# network namespace of its own, with only a loopback interface. A lab
# started there puts its root leg, API server and routes in that namespace
# instead of the machine's, so two lab packages can run side by side
# (e2e/lab/world.go); `make e2e` runs every package so. The
# namespace is anonymous: it goes away with the last process in it.
#
# The command runs at nice -10, and so does what it starts outside the lab
# (kubectl, ip, the polls that time a route or an answer): the lab's own
# processes and nodes already outweigh other work by their cgroups' CPU
# weight, but the test binary stayed in the machine's cgroup at the
# weight of the compilers of the race and API tests that make test starts
# beside it. A warm make test's first minutes keep every core busy, and a
# test's own measurement then ran late: a poll of the router's FIB by `ip route` that took a
# fraction of a second counted as BFD's detection time.
set -eu
if [ "$#" -eq 0 ]; then
	echo "usage: $0 command [args...]" >&2
	exit 2
fi
if [ "$(id -u)" != 0 ]; then
	exec "$@" # the lab needs root and skips its tests; unshare would fail
fi
exec nice -n -10 unshare --net -- sh -c 'ip link set lo up && exec "$@"' own-network "$@"
