// Package lab is Herald's end-to-end network lab: Linux network
// namespaces as Kubernetes nodes on one L2 segment, a real BGP router (FRR
// or BIRD), a client on the segment and an external client behind the
// router, a real etcd + kube-apiserver, kube-proxy in every node and a
// tiny HTTP "pod" behind every node. Everything runs on one machine with
// no container engine; every test of Herald against real components
// (L2 ARP/NDP failover, BGP with FRR and BIRD, RBAC) runs on it.
//
// Start brings a lab up (about 6 s once the control-plane binaries are
// cached) and Close removes it; Main and Shared give a test package one
// lab for all its tests. `herald-lab up|down|status` (make lab-up,
// lab-down, lab-status) is the same lab for humans.
//
// Address plan (constants in plan.go): the segment is 198.51.100.0/25 and
// 2001:db8:1::/64 with the router at .1/::1, nodes at .11-.18 /
// ::11-::18, the client at .100/::100 and the root namespace's leg at
// .126/::fe (the API server listens there); the L2 pool is
// 198.51.100.64/27 and 2001:db8:1::64-7f; the BGP pools 198.51.100.128/27
// and 2001:db8:ff::/120; pod N is 198.51.100.(162+4(N-1)) and
// 2001:db8:10:N::2; the external client 198.51.100.194 and 2001:db8:2::2.
// Every name the lab gives (namespaces herald-<run>-<host>, the root leg
// herald<run>, /run/herald-lab/<run>/) carries a 4-character run id.
//
// What the package owns: the namespaces, links, addresses and routes it
// creates, the processes it starts (by PID, recorded in
// /run/herald-lab/<run>/state.json), the router's configuration, the
// Node objects and the EndpointSlices it writes (managed-by
// lab.herald.dev). What it never does: touch any address outside
// 198.51.100.0/24 and 2001:db8::/32, route anything in the root namespace
// beyond its leg's connected prefixes, stop a process by name, or run
// anything of Herald's itself (tests start Herald with Lab.Start).
//
// One lab at a time per machine (there is one address plan): Start waits
// for a machine-wide lock, so test packages that run in parallel take
// turns, and it removes what crashed runs left behind.
package lab
