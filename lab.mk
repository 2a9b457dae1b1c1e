# Herald's network lab for humans (see e2e/lab and e2e/cmd/herald-lab).
# The Makefile includes this file; on its own: make -f lab.mk lab-up
#
#   make lab-up      bring the lab up: a real cluster in namespaces (etcd,
#                    kube-apiserver on 198.51.100.126:6443, controller-manager,
#                    scheduler; per node containerd, kubelet, kube-proxy), the
#                    FRR router and the clients, and print where everything is.
#                    A second lab-up while one is up prints it again.
#   make lab-down    remove every lab on this machine, leftovers included
#                    (processes by PID, node cgroups, namespaces, files)
#   make lab-status  show the running lab, its processes, their memory, and
#                    kubectl's view of nodes, pods and Herald
#
# Options: LAB_NODES=3 LAB_ROUTER=frr|bird LAB_PROXY_MODE=nftables|iptables
# LAB_PORT=6443. Needs root and Linux; missing Debian packages are
# installed with hack/install-deps.sh.

LAB_NODES ?= 3
LAB_ROUTER ?= frr
LAB_PROXY_MODE ?= nftables
LAB_PORT ?= 6443
HERALD_LAB := bin/herald-lab

.PHONY: lab-up lab-down lab-status herald-lab

herald-lab:
	@mkdir -p bin
	set -a && . ./hack/build.env && go build -o $(HERALD_LAB) ./e2e/cmd/herald-lab

lab-up: herald-lab
	$(HERALD_LAB) up -nodes $(LAB_NODES) -router $(LAB_ROUTER) -proxy-mode $(LAB_PROXY_MODE) -port $(LAB_PORT)

lab-down: herald-lab
	$(HERALD_LAB) down

lab-status: herald-lab
	$(HERALD_LAB) status
