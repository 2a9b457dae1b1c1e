package routerconf

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Path is one BGP path the router holds for a prefix.
type Path struct {
	// Peer is the neighbor the path came from.
	Peer     netip.Addr
	NextHops []netip.Addr
	// Best is the selected path; Multipath marks paths used for ECMP
	// besides it (FRR); BIRD marks only Best.
	Best, Multipath bool
	// Stale: the router keeps the path through the peer's graceful
	// restart, until the peer refreshes it or the restart times out (FRR
	// only).
	Stale  bool
	ASPath []uint32
	Origin string // IGP, EGP, incomplete
	MED    uint32
	// LocalPref is the LOCAL_PREF attribute; HasLocalPref is false when
	// the path carried none (eBGP).
	LocalPref    uint32
	HasLocalPref bool
	// Communities as "a:b", LargeCommunities as "a:b:c", in the order the
	// router lists them.
	Communities      []string
	LargeCommunities []string
	// ExtendedCommunities is the router's text of the extended
	// communities (FRR: "LB:64513:125000 (1.000 Mbps)" for a link
	// bandwidth); empty when none (or BIRD).
	ExtendedCommunities string
}

// RIBEntry is the router's BGP table entry for one prefix.
type RIBEntry struct {
	Prefix netip.Prefix
	Paths  []Path
}

// BestPath returns the selected path.
func (e RIBEntry) BestPath() (Path, bool) {
	for _, p := range e.Paths {
		if p.Best {
			return p, true
		}
	}
	return Path{}, false
}

// Peer is one BGP session of the router.
type Peer struct {
	Address netip.Addr
	ASN     uint32
	// State is the BGP FSM state as the router names it: "Established",
	// "Active", "Connect", "Idle", "OpenSent", "OpenConfirm".
	State string
	// Dynamic is a session accepted through a listen range.
	Dynamic bool
	// Name is FRR's peer group or BIRD's protocol name.
	Name string
	// Received counts accepted prefixes per family ("ipv4", "ipv6").
	Received map[string]int
	// Established and Dropped count the session's ups and downs (FRR only).
	Established, Dropped int
	// GracefulRestart: both sides announced the graceful-restart
	// capability on the session (FRR only).
	GracefulRestart bool
	// EndOfRIB lists the families ("ipv4", "ipv6") whose End-of-RIB
	// marker the router received on the session, sorted (FRR only).
	EndOfRIB []string
	// BFD is the BFD session state ("up", "down", "init", ...), or ""
	// when the session has no BFD.
	BFD string
	// BFDDetect is how long the router's BFD waits for the peer's packets
	// before it declares the session down, from the timers the two sides
	// negotiated (FRR only; 0 when unknown): the peer's multiplier times
	// the slower of the peer's transmit interval and the router's receive
	// interval. Until the session is up a BFD speaker transmits at most
	// once a second (RFC 5880 6.8.3), so a fresh session detects slowly.
	BFDDetect time.Duration
}

// Up reports whether the session is Established.
func (p Peer) Up() bool { return strings.EqualFold(p.State, "Established") }

func parseAddr(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil {
		return netip.Addr{}, fmt.Errorf("address %q: %w", s, err)
	}
	return a, nil
}
