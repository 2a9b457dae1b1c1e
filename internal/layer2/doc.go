// Package layer2 makes the local network deliver the VIPs this node owns in
// L2 mode: it answers ARP (IPv4) and NDP (IPv6) for them on the chosen
// interfaces and sends gratuitous ARP / unsolicited neighbour advertisements
// when it starts announcing one.
//
// It owns:
//   - the choice of interfaces for a VIP (ChooseInterfaces, a pure function);
//   - one ARP responder (mdlayher/arp) per chosen interface with IPv4 VIPs, and
//     one NDP responder (an AF_PACKET socket for the solicitations, multicast
//     and unicast, and other hosts' advertisements, in arrival order with
//     their receive times; an mdlayher/ndp ICMPv6 socket for group
//     membership and for sending) per chosen interface with IPv6 VIPs;
//   - the netlink subscriptions (links, addresses, default routes) that keep
//     the responders in step with the interfaces, without polling;
//   - the herald_l2_* Prometheus counters, among them hand-overs.
//
// Hand-over (make-before-break): a VIP the speaker lists as Releasing is
// still answered but never advertised, until another host announces it with
// a gratuitous ARP or an unsolicited NA; the responder reading that packet
// stops answering for the VIP on that interface at once and Config.OnYield
// tells the speaker. Requests and announcements come through one socket
// per protocol, so a request that reached the interface before the new
// owner's announcement is still answered. On the other side, a VIP is answered from its first
// gratuitous packet on, so the new owner announces itself before it
// answers.
//
// Every announced VIP is announced again every Config.Refresh, and two
// owners of one VIP (a split brain) are fenced on the wire: the one whose
// MAC ranks lower for the VIP stops (fence.go). Frames that do not parse
// are counted and skipped; only a failing socket pauses a read loop.
//
// A process that was not scheduled for longer than Config.PauseAfter (a
// VM pause: the others may have taken its VIPs over) answers none of them
// until it knows who answers them now; the rule is internal/l2owner's
// machine, fed from the read path (pause.go).
//
// It never decides which VIPs this node owns (the speaker does, through
// SetAnnouncements), never adds addresses, routes or neighbour entries to the
// system, and never answers for an address it was not told to announce: the
// owned set is consulted for every packet, so a VIP that is withdrawn stops
// being answered at once.
package layer2
