#!/usr/bin/env bash
# Install the Debian packages Herald's lab and end-to-end tests run
# commands from (e2e/lab calls this with the packages it finds missing).
#
# Usage: hack/install-deps.sh [package...]   (default: all of them)
#
# Needs root and a Debian-like system with apt-get. `arping` (Habets) and
# `iputils-arping` conflict: the lab uses iputils-arping, so apt-get may
# replace the other one. Package scripts must not start frr or bird in the
# root namespace: when the machine has no /usr/sbin/policy-rc.d, one that
# refuses service starts is put in place for the install and removed after.
set -euo pipefail

packages=("$@")
[ ${#packages[@]} -gt 0 ] || packages=(iproute2 procps iputils-ping iputils-arping ndisc6 tcpdump nftables iptables conntrack frr bird2 curl containerd runc containernetworking-plugins util-linux)

die() { echo "install-deps: $*" >&2; exit 1; }
[ "$(uname -s)" = Linux ] || die "the lab needs Linux (network namespaces); this is $(uname -s)"
[ "$(id -u)" = 0 ] || die "run as root (apt-get needs it): sudo $0 ${packages[*]}"
command -v apt-get >/dev/null || die "no apt-get: install ${packages[*]} with this system's package manager"

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f '${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all of ${packages[*]} are installed"
  exit 0
fi

policy=/usr/sbin/policy-rc.d
ours=
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\n# herald install-deps: no service starts during the install\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  ours=1
fi
cleanup() { [ -z "$ours" ] || rm -f "$policy"; }
trap cleanup EXIT

echo "install-deps: installing ${missing[*]} with apt-get"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
