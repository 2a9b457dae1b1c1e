// Package layer2 makes the local network deliver the VIPs this node owns in
// L2 mode: it answers ARP (IPv4) and NDP (IPv6) for them on the chosen
// interfaces and sends gratuitous ARP / unsolicited neighbour advertisements
// when it starts announcing one.
//
// It owns:
//   - the choice of interfaces for a VIP (ChooseInterfaces, a pure function);
//   - one ARP responder (mdlayher/arp) per chosen interface with IPv4 VIPs, and
//     one NDP responder (mdlayher/ndp plus an AF_PACKET socket for unicast
//     neighbour-unreachability probes) per chosen interface with IPv6 VIPs;
//   - the netlink subscriptions (links, addresses, default routes) that keep
//     the responders in step with the interfaces, without polling;
//   - the herald_l2_* Prometheus counters.
//
// It never decides which VIPs this node owns (the speaker does, through
// SetAnnouncements), never adds addresses, routes or neighbour entries to the
// system, and never answers for an address it was not told to announce: the
// owned set is consulted for every packet, so a VIP that is withdrawn stops
// being answered at once.
package layer2
