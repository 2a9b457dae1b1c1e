package routerconf

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"
)

type frrRoute struct {
	Prefix string `json:"prefix"`
	Paths  []struct {
		ASPath struct {
			Segments []struct {
				List []uint32 `json:"list"`
			} `json:"segments"`
		} `json:"aspath"`
		Origin    string                  `json:"origin"`
		Metric    uint32                  `json:"metric"`
		LocPrf    *uint32                 `json:"locPrf"`
		Multipath bool                    `json:"multipath"`
		Stale     bool                    `json:"stale"`
		Bestpath  *struct{ Overall bool } `json:"bestpath"`
		Community *struct {
			List []string `json:"list"`
		} `json:"community"`
		LargeCommunity *struct {
			List []string `json:"list"`
		} `json:"largeCommunity"`
		ExtendedCommunity *struct {
			String string `json:"string"`
		} `json:"extendedCommunity"`
		Nexthops []struct {
			IP string `json:"ip"`
		} `json:"nexthops"`
		Peer frrPathPeer `json:"peer"`
	} `json:"paths"`
}

// frrPathPeer is the neighbor a path came from; an unnumbered one has
// its interface.
type frrPathPeer struct {
	PeerID    string `json:"peerId"`
	Interface string `json:"interface"`
}

func (p frrPathPeer) unnumbered() bool { return p.Interface != "" }

// ParseFRRRoute parses `show bgp ipv4|ipv6 unicast PREFIX json`. An empty
// object (no such route) gives an entry without paths.
func ParseFRRRoute(data []byte) (RIBEntry, error) {
	var r frrRoute
	if err := json.Unmarshal(data, &r); err != nil {
		return RIBEntry{}, fmt.Errorf("FRR route JSON: %w", err)
	}
	var e RIBEntry
	if r.Prefix != "" {
		p, err := netip.ParsePrefix(r.Prefix)
		if err != nil {
			return e, fmt.Errorf("FRR route prefix: %w", err)
		}
		e.Prefix = p
	}
	for _, fp := range r.Paths {
		p := Path{Origin: fp.Origin, MED: fp.Metric, Multipath: fp.Multipath, Stale: fp.Stale}
		p.Best = fp.Bestpath != nil && fp.Bestpath.Overall
		if fp.LocPrf != nil {
			p.LocalPref, p.HasLocalPref = *fp.LocPrf, true
		}
		for _, s := range fp.ASPath.Segments {
			p.ASPath = append(p.ASPath, s.List...)
		}
		if fp.Community != nil {
			p.Communities = slices.Clone(fp.Community.List)
		}
		if fp.LargeCommunity != nil {
			p.LargeCommunities = slices.Clone(fp.LargeCommunity.List)
		}
		if fp.ExtendedCommunity != nil {
			p.ExtendedCommunities = fp.ExtendedCommunity.String
		}
		for _, nh := range fp.Nexthops {
			a, err := parseAddr(nh.IP)
			if err != nil {
				return e, fmt.Errorf("FRR next hop: %w", err)
			}
			p.NextHops = append(p.NextHops, a)
		}
		if fp.Peer.PeerID != "" {
			a, err := parseAddr(fp.Peer.PeerID)
			if err != nil && !fp.Peer.unnumbered() {
				return e, fmt.Errorf("FRR peer: %w", err)
			}
			p.Peer = a // zero for an unnumbered peer FRR names by its interface
		}
		e.Paths = append(e.Paths, p)
	}
	return e, nil
}

type frrNeighborJSON struct {
	RemoteAs               uint32 `json:"remoteAs"`
	BGPState               string `json:"bgpState"`
	PeerGroup              string `json:"peerGroup"`
	PeerSubnetRangeGroup   string `json:"peerSubnetRangeGroup"`
	ConnectionsEstablished int    `json:"connectionsEstablished"`
	ConnectionsDropped     int    `json:"connectionsDropped"`
	AddressFamilyInfo      map[string]struct {
		AcceptedPrefixCounter int `json:"acceptedPrefixCounter"`
	} `json:"addressFamilyInfo"`
	PeerBfdInfo *struct {
		Status string `json:"status"`
	} `json:"peerBfdInfo"`
	NeighborCapabilities struct {
		GracefulRestart string `json:"gracefulRestart"`
	} `json:"neighborCapabilities"`
	GracefulRestartInfo struct {
		EndOfRibRecv map[string]bool `json:"endOfRibRecv"`
	} `json:"gracefulRestartInfo"`
}

// ParseFRRNeighbors parses `show bgp neighbors json`, sorted by address.
func ParseFRRNeighbors(data []byte) ([]Peer, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("FRR neighbors JSON: %w", err)
	}
	var out []Peer
	for addr, raw := range m {
		a, err := netip.ParseAddr(addr)
		if err != nil {
			continue // not a neighbor entry
		}
		var n frrNeighborJSON
		if err := json.Unmarshal(raw, &n); err != nil {
			return nil, fmt.Errorf("FRR neighbor %s: %w", addr, err)
		}
		p := Peer{Address: a, ASN: n.RemoteAs, State: n.BGPState, Name: n.PeerGroup,
			Dynamic: n.PeerSubnetRangeGroup != "", Established: n.ConnectionsEstablished, Dropped: n.ConnectionsDropped,
			GracefulRestart: n.NeighborCapabilities.GracefulRestart == "advertisedAndReceived",
			Received:        map[string]int{}}
		for af, info := range n.AddressFamilyInfo {
			p.Received[frrFamily(af)] += info.AcceptedPrefixCounter
		}
		for af, ok := range n.GracefulRestartInfo.EndOfRibRecv {
			if ok {
				p.EndOfRIB = append(p.EndOfRIB, frrFamily(af))
			}
		}
		slices.Sort(p.EndOfRIB)
		if n.PeerBfdInfo != nil {
			p.BFD = strings.ToLower(n.PeerBfdInfo.Status)
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Peer) int { return a.Address.Compare(b.Address) })
	return out, nil
}

func frrFamily(af string) string {
	switch {
	case strings.HasPrefix(af, "ipv4"):
		return "ipv4"
	case strings.HasPrefix(af, "ipv6"):
		return "ipv6"
	}
	return af
}

// BFDPeer is one of the router's BFD sessions.
type BFDPeer struct {
	Status string // "up", "down", "init"...
	// Interface is the router's interface of a link-local (unnumbered)
	// peer, "" for other peers.
	Interface string
	// Detect is the session's detection time (Peer.BFDDetect).
	Detect time.Duration
}

// ParseFRRBFDPeers parses `show bfd peers json` into peer address ->
// session.
func ParseFRRBFDPeers(data []byte) (map[netip.Addr]BFDPeer, error) {
	var peers []struct {
		Peer       string `json:"peer"`
		Interface  string `json:"interface"`
		Status     string `json:"status"`
		ReceiveMS  int    `json:"receive-interval"`
		RemoteTxMS int    `json:"remote-transmit-interval"`
		RemoteMult int    `json:"remote-detect-multiplier"`
	}
	if err := json.Unmarshal(data, &peers); err != nil {
		return nil, fmt.Errorf("FRR BFD peers JSON: %w", err)
	}
	out := map[netip.Addr]BFDPeer{}
	for _, p := range peers {
		if a, err := netip.ParseAddr(p.Peer); err == nil {
			out[a] = BFDPeer{Status: strings.ToLower(p.Status), Interface: p.Interface,
				Detect: time.Duration(p.RemoteMult*max(p.ReceiveMS, p.RemoteTxMS)) * time.Millisecond}
		}
	}
	return out, nil
}
