// Package bgp owns the speaker's embedded BGP server (GoBGP v4.8.0): the
// desired sessions and paths come in through Apply, the difference from what
// GoBGP holds goes out as GoBGP calls, and session state comes back through
// Sessions, OnSessionChange events and Prometheus metrics.
//
// It never decides what to announce (internal/announce does), never reads
// Kubernetes objects, and never touches the node's addresses or routes.
//
// # One server, dialing out
//
// There is one GoBGP server per Speaker, without a gRPC listener and without
// a BGP listener (ListenPort -1): the speaker always opens the TCP
// connection, so the router must accept connections from the nodes (a
// static neighbor or a listen range). TCP MD5 passwords are set on the
// dialing socket, so no listener is needed for them either. The server
// starts at the first Apply that has a session, with the node's IPv4
// address as router ID (on an IPv6-only node: the first session's routerID).
//
// # Sessions
//
// Apply diffs the desired sessions against the configured ones by name.
// A change of the connect timer or of BFD is applied in place (UpdatePeer);
// any other change deletes and re-adds that one neighbor; other sessions are
// never touched. Defaults: port 179, hold time 90 s, keepalive hold/3,
// connect retry 5 s (GoBGP's own default is 120 s, and its floor is 2 s);
// after a reset (BFD down) GoBGP waits ConnectTime before redialing (its
// default is 30 s). A zero SourceAddress leaves the source to the kernel at
// each connect, which is the node's address on the route to the peer;
// Sessions reports the address actually used.
//
// Refused, with the reason in Sessions()[i].Error and in Apply's error
// (the caller reports it on the BGPPeer):
//   - a second session to a peer address already used: GoBGP keys
//     neighbors by address. The session already configured keeps the
//     address; otherwise the first by name gets it.
//   - a routerID that differs from the server's. Per-session router IDs are
//     NOT supported: GoBGP has one router ID per server, a second server
//     per router ID would also fight over the BFD port (UDP 3784).
//   - invalid values (missing ASN, hold time under 3 s, ...).
//
// MyASN is set per neighbor (GoBGP's local AS), so sessions may use
// different local ASNs on one server.
//
// # Paths and per-peer delivery
//
// GoBGP has one global RIB. Each prefix is added to it once, with origin
// IGP and its next hop only: IPv4 prefixes with the unspecified next hop,
// which GoBGP replaces with the session's local address (next-hop-self);
// IPv6 prefixes with the node's global IPv6 address (an unspecified next hop
// over an IPv4 session would go out as an IPv4 address, which routers
// reject). An IPv4 prefix sent over an IPv6 session gets the node's IPv4
// address as next hop.
//
// Who receives a prefix, and with which communities, large communities and
// LOCAL_PREF, is decided by one global export policy with default action
// reject. Prefixes with the same per-session treatment share a prefix set;
// sessions with the same attributes share a neighbor set; each pair is an
// ACCEPT statement that adds the attributes. This is the mechanism measured
// to work on GoBGP (per-neighbor policies exist only for route-server
// clients). Two Paths for one prefix with different Peers and communities
// therefore give each router its own attributes. A global import policy
// keeps only locally originated paths, so routes learned from routers are
// never re-advertised to other routers.
//
// Policy changes do not reach routes already sent, so Apply withdraws
// removed prefixes first, then installs the new policy, then adds new
// prefixes, then soft-resets outbound only the peers whose share of an
// existing prefix changed (they get new attributes, and withdrawals for
// what they lost). Adding a Service therefore sends only its new prefixes
// and never resets a session. GoBGP exempts withdrawals from export policy:
// a removed prefix is withdrawn toward every session of its family, also
// those that never received it, which routers ignore (RFC 4271 §9).
//
// LOCAL_PREF is sent to iBGP sessions only (GoBGP strips it toward eBGP).
// Asking for it on an eBGP session is not silently dropped: the session
// gets a warning in Sessions()[i].Warnings, one line per kind of problem.
//
// # Events
//
// OnSessionChange is called for every transition to and from Established,
// in order, on one goroutine, with GoBGP's disconnect reason. When a BFD
// session goes down, GoBGP resets the BGP session with an administrative
// reset, and only then marks its BFD session down. So the reason is
// rewritten to "BFD down (...)" for every administrative reset the
// speaker sent without asking for it itself (its only own hard reset is
// the graceful-restart release at shutdown), and for any other reason
// while GoBGP's BFD state for that neighbor is not Up. A router's Cease
// "BFD down" (subcode 10, RFC 9384) reads "BFD down on the peer".
//
// # BFD
//
// BFD is GoBGP's native single-hop BFD (RFC 5881), opt-in per session
// (Session.BFD; default 300 ms × 3). Limits of GoBGP v4.8.0, measured in
// docs/gobgp.md:
//   - The router MUST list the nodes as static neighbors. With a dynamic
//     neighbor (FRR "bgp listen range") the session flaps for ever: FRR
//     re-creates its BFD session with a new discriminator for every dynamic
//     neighbor and GoBGP v4.8.0 drops it, then resets BGP (osrg/gobgp#3561
//     and a discriminator check; said to be fixed in v4.9.0).
//   - After a failure, a stale reset can kill the next session once, a few
//     milliseconds after it is Established (#3561): one extra flap.
//   - Single-hop only (no multihop port 4784, no echo, no authentication);
//     the BFD source address is the kernel's choice, not SourceAddress.
//   - One listener on UDP *:3784 per process: a second BFD implementation in
//     the same network namespace (FRR bfdd on the node) steals packets.
//
// # Graceful restart and Shutdown
//
// Shutdown withdraws every path, waits until the withdrawals are sent, then
// closes the sessions with a Cease and stops GoBGP. Sessions with
// GracefulRestart are closed first with an administrative-reset Cease and
// no withdrawal; a router that negotiated RFC 8538 (the N bit, which the
// speaker announces) keeps our routes for the restart time (120 s). A
// router without RFC 8538 flushes them, as for any Cease. The sessions of
// a newly started server announce the Restart State bit and each family's
// Forwarding State bit (RFC 4724), without which the router would drop
// the routes it kept as soon as the session is back; the server sends its
// paths once the router's End-of-RIB arrives, or after one second, and the
// router then drops what was not sent again.
//
// # Metrics
//
// herald_bgp_session_up{peer}, herald_bgp_paths_advertised{peer} and
// herald_bgp_updates_sent_total{peer}, read from GoBGP at scrape time and
// registered on the Registerer given to New; peer is the session name.
package bgp
