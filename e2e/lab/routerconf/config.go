package routerconf

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Kind names a router implementation.
type Kind string

// The router implementations the lab can run.
const (
	FRR  Kind = "frr"
	BIRD Kind = "bird"
)

// Config is the router's BGP set-up: one ASN, listen ranges that accept
// any node of the segment (dynamic neighbors) and optional static
// neighbors, which take precedence over the ranges for their address.
type Config struct {
	RouterID netip.Addr
	ASN      uint32
	// PeerASN is the nodes' ASN (equal to ASN for iBGP).
	PeerASN uint32
	// ListenRanges accept sessions from any address inside them.
	ListenRanges []netip.Prefix
	// ListenRangeBFD attaches the BFD profile to the listen ranges too
	// (GoBGP v4.8.0 flaps against that; see docs/gobgp.md, BFD).
	ListenRangeBFD bool
	Neighbors      []Neighbor
	BFD            BFD
	HoldTime       int // seconds
	Keepalive      int // seconds
	MaxPaths       int
	// LogFile is where BIRD writes its log (FRR logs per daemon).
	LogFile string

	// Interfaces are unnumbered neighbors (FRR only): one peer on each
	// interface, over IPv6 link-local addresses, whatever its AS (FRR's
	// "remote-as external" or "internal" by PeerASN).
	Interfaces []string
	// InterfaceBFD attaches the BFD profile to the interface neighbors
	// (single-hop BFD between the link-local addresses).
	InterfaceBFD bool
}

// Neighbor is a statically configured peer.
type Neighbor struct {
	Address netip.Addr
	// ASN of the peer; 0 means Config.PeerASN.
	ASN uint32
	// BFD attaches the BFD profile to the session.
	BFD bool
	// Password enables TCP MD5 authentication.
	Password string
	// Active lets the router dial the peer too (default: passive, the
	// node dials in, as with the listen ranges).
	Active bool
}

// BFD timers in milliseconds.
type BFD struct {
	TransmitMS, ReceiveMS, Multiplier int
}

// Validate reports the first problem that would make a rendered
// configuration wrong or unsafe.
func (c Config) Validate() error {
	if !c.RouterID.Is4() {
		return fmt.Errorf("router ID %v: must be an IPv4 address", c.RouterID)
	}
	if c.ASN == 0 || c.PeerASN == 0 {
		return fmt.Errorf("ASN %d / peer ASN %d: both must be set", c.ASN, c.PeerASN)
	}
	if c.HoldTime < 3 || c.Keepalive < 1 || c.Keepalive*3 > c.HoldTime {
		return fmt.Errorf("hold time %d s, keepalive %d s: need hold >= 3 and keepalive <= hold/3", c.HoldTime, c.Keepalive)
	}
	if c.BFD.TransmitMS <= 0 || c.BFD.ReceiveMS <= 0 || c.BFD.Multiplier <= 0 {
		return fmt.Errorf("BFD %+v: intervals and multiplier must be positive", c.BFD)
	}
	for _, i := range c.Interfaces {
		if i == "" || len(i) > 15 || strings.ContainsAny(i, " \t\r\n\"'\\;{}#!/%") {
			return fmt.Errorf("interface neighbor %q: not an interface name", i)
		}
	}
	seen := map[netip.Addr]bool{}
	for _, n := range c.Neighbors {
		if !n.Address.IsValid() {
			return fmt.Errorf("static neighbor without an address")
		}
		if seen[n.Address] {
			return fmt.Errorf("static neighbor %v listed twice", n.Address)
		}
		seen[n.Address] = true
		if strings.ContainsAny(n.Password, " \t\r\n\"'\\;{}#!") {
			return fmt.Errorf("neighbor %v: password must be one word without quotes, spaces or ;{}#!", n.Address)
		}
	}
	return nil
}

func (c Config) anyBFD() bool {
	return c.ListenRangeBFD || (c.InterfaceBFD && len(c.Interfaces) > 0) || slices.ContainsFunc(c.Neighbors, func(n Neighbor) bool { return n.BFD })
}

func (c Config) peerASN(n Neighbor) uint32 {
	if n.ASN != 0 {
		return n.ASN
	}
	return c.PeerASN
}

// sortedNeighbors returns the neighbors in address order, so the rendered
// text does not depend on the caller's order.
func (c Config) sortedNeighbors() []Neighbor {
	ns := slices.Clone(c.Neighbors)
	slices.SortFunc(ns, func(a, b Neighbor) int { return a.Address.Compare(b.Address) })
	return ns
}
