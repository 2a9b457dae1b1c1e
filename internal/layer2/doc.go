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
// Who answers a VIP on an interface while it changes owner is decided by
// that VIP's ownership machine (internal/l2owner: make-before-break, the
// split-brain fence, the give-up, the release ask, the pause rule; its
// testdata/ has a scenario for each). This package is its socket side
// (owner.go): the read path feeds the machine every frame that concerns
// it (another host's announcement, answer, question, notice or give-up)
// inline, reconcile feeds it the speaker's decision, timers its wakes,
// and its actions become the atomics the fast path reads (vipState),
// frames, metrics, logs and callbacks (Config.OnYield, OnConflict,
// OnForeignClaim). Requests and announcements come through one socket
// per protocol, so a request that reached the interface before the new
// owner's announcement is still answered by the old one.
//
// Every announced VIP is announced again every Config.Refresh, so that
// two owners hear each other; frames that do not parse are counted and
// skipped; only a failing socket pauses a read loop. A heartbeat detects
// that this process was not scheduled for longer than Config.PauseAfter
// (pause.go) and feeds the pause to every machine.
//
// It never decides which VIPs this node owns (the speaker does, through
// SetAnnouncements), never adds addresses, routes or neighbour entries to the
// system, and never answers for an address it was not told to announce: the
// owned set is consulted for every packet, so a VIP that is withdrawn stops
// being answered at once.
package layer2
