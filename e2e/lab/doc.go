// Package lab is Herald's end-to-end lab: a real Kubernetes cluster in
// Linux network namespaces on one machine, with no container engine.
// Nodes are namespaces on one L2 segment, each running its own containerd
// (in a mount namespace with the cgroup hierarchies and a cgroup root of
// its own), kubelet and kube-proxy, with a CNI bridge for its pods; etcd,
// kube-apiserver, kube-controller-manager (every controller: endpointslice,
// node lifecycle, daemonset, ...) and kube-scheduler run beside them; a
// real BGP router (FRR or BIRD), a client on the segment and an external
// client behind the router complete it. Backends are real pods
// (Deployments of the podserver image with readiness probes), and Herald
// is installed by e2e/deploy from its own images and manifests.
//
// Start brings a lab up (about a minute once the control-plane binaries
// are cached) and Close removes it; Main and Shared give a test package
// one lab for all its tests. `herald-lab up|down|status` (make lab-up,
// lab-down, lab-status) is the same lab for humans.
//
// Failure injection works on the real objects: StopKubelet/StartKubelet
// (a real NotReady after NodeMonitorGracePeriod), ContainerPID (kill a
// container by PID), SetLink, Drain/Cordon, RolloutRestart, node labels
// and taints.
//
// Address plan (constants in plan.go): the segment is 198.51.100.0/25 and
// 2001:db8:1::/64 with the router at .1/::1, nodes at .11-.18 /
// ::11-::18, the client at .100/::100 (and the L2 monitors' 32 probe
// sources, 198.51.100.32/27 and 2001:db8:1::1:0/123) and the root namespace's leg at
// .126/::fe (the API server listens there); the L2 pool is
// 198.51.100.64/27 and 2001:db8:1::64-7f; the BGP pools 198.51.100.128/27
// and 2001:db8:ff::/120; node N's pods get 198.51.100.(160+8(N-1))/29 and
// 2001:db8:10:N::/64 (so at most 4 nodes); the external client
// 198.51.100.194 and 2001:db8:2::2.
// Every name the lab gives (namespaces herald-<run>-<host>, the root leg
// herald<run>, /run/herald-lab/<run>/) carries a 4-character run id.
//
// What the package owns: the namespaces, links, addresses and routes it
// creates, the processes it starts (by PID, recorded in
// /run/herald-lab/<run>/state.json), the containers in its nodes' cgroups,
// the router's configuration and the backend Deployments, and, while it
// runs, the scheduling policy of the kernel's ksoftirqd threads (real-time,
// recorded in the state and restored; softirq.go). What it never
// does: touch any address outside 198.51.100.0/24 and 2001:db8::/32, route
// anything in the root namespace beyond its leg's connected prefixes (pods
// reach the API server masqueraded to their node's address), write Node
// status or EndpointSlices (the kubelets and the endpointslice controller
// do), stop a process by name, or install Herald itself (e2e/deploy does).
//
// Lab is split by concern: Network (namespaces, links, addresses, routes),
// Routers (FRR or BIRD) and Cluster (the API, kubectl, Nodes, Services)
// are embedded in it; the rest of Lab is the run (state file, processes,
// start and teardown, the kubelets and containerd). The network, process,
// router and polling pieces underneath are test/labkit's, shared with
// the internal lab tests of internal/bgp, internal/layer2 and
// internal/members.
//
// One lab at a time per root namespace (there is one address plan): Start
// waits for that namespace's lock, so test packages that run in parallel
// in it take turns, and it removes what crashed runs left behind. A test
// binary run in a network namespace of its own (hack/own-network.sh) has
// its own root namespace, a world (world.go), and its lab runs beside the
// others: `make e2e` runs every package so (one at a time; E2E_LINES=2,
// two). Runs of other worlds that are in use are never taken for
// leftovers, and ksoftirqd's real-time policy is shared by every run and
// restored by the last. A detached lab is left alone only once its owner
// handed it over (Release, and while its holder, if any, runs): one killed
// during bring-up is a crashed run.
package lab
