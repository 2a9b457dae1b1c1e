#!/bin/sh
# own-network.sh runs a command (a test binary: `go test -exec`) in a new
# network namespace of its own, with only a loopback interface. A lab
# started there puts its root leg, API server and routes in that namespace
# instead of the machine's, so two lab packages can run side by side
# (e2e/lab/world.go); `make e2e` runs every package so. The
# namespace is anonymous: it goes away with the last process in it.
set -eu
if [ "$#" -eq 0 ]; then
	echo "usage: $0 command [args...]" >&2
	exit 2
fi
if [ "$(id -u)" != 0 ]; then
	exec "$@" # the lab needs root and skips its tests; unshare would fail
fi
exec unshare --net -- sh -c 'ip link set lo up && exec "$@"' own-network "$@"
