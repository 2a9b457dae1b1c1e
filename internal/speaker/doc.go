// Package speaker is the frame of Herald's speaker, the DaemonSet that
// makes the network deliver Service addresses to nodes. It watches
// Services, EndpointSlices, Nodes, Herald's objects and Secrets, runs one
// reconcile that asks internal/announce what this node should announce,
// and applies the difference through two backends with a handful of
// methods: L2 (ARP/NDP, internal/layer2) and BGP (internal/bgp). The
// Speaker wires objects with one job each and runs the loop: cluster
// (what it reads), liveness, l2Reconciler, bgpReconciler,
// statusReporter and sessionReporter, each owning its state and lock. Node
// liveness has two sources: internal/members, and for nodes the member
// list has not seen the per-node Leases each synced speaker renews
// (lease.go, leasebook.go, liveness.go); a node known to neither is down.
// The member list starts only once the caches synced, and Ready
// (readiness.go) is what /readyz serves.
//
// In L2 mode the speaker's plan (l2.go) lists the addresses this node
// owns and those it releases to another live node (for at most the
// release grace); who answers them meanwhile, make-before-break, is
// internal/l2owner's machine, fed by internal/layer2. A restarting
// speaker claims nothing until its view of the other members has
// settled. On SIGTERM the speaker releases its addresses, leaves the
// member list, and withdraws its BGP routes before closing the sessions.
package speaker
