package bgp

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
)

// attrs is what one session receives with one prefix, on top of the path in
// GoBGP's RIB (origin IGP and the next hop). Export policy adds them.
type attrs struct {
	communities  []uint32 // sorted, unique
	large        [][3]uint32
	localPref    uint32
	hasLocalPref bool
	nextHop      netip.Addr // set only to override the RIB next hop
	linkBW       uint32     // link bandwidth in bytes/s; 0: no community
	linkAS       uint32     // the session's local AS, for the community
	nextHopSelf  bool       // the session's own local address (unnumbered IPv6 paths)
}

// delivery says which sessions, by peer address, receive one prefix and
// with which attributes.
type delivery map[netip.Addr]attrs

// pathPlan is the desired RIB and export policy input.
type pathPlan struct {
	rib        map[netip.Prefix]netip.Addr // next hop in GoBGP's RIB per prefix
	deliveries map[netip.Prefix]delivery
	warnings   *warnings
	errs       []error
}

// planPaths resolves the desired paths against the configured sessions.
// IPv4 paths carry the unspecified next hop, which GoBGP replaces with the
// session's local address; IPv6 paths carry the node's IPv6 address, since
// "::" over an IPv4 session would be sent as an IPv4 next hop.
func planPaths(paths []Path, sessions []Session, nodeV4, nodeV6 netip.Addr) pathPlan {
	p := pathPlan{rib: map[netip.Prefix]netip.Addr{}, deliveries: map[netip.Prefix]delivery{}, warnings: newWarnings()}
	byName := map[string]Session{}
	for _, s := range sessions {
		byName[s.Name] = s
	}
	for _, path := range paths {
		prefix, ok := normalPrefix(path.Prefix)
		if !ok {
			p.errs = append(p.errs, fmt.Errorf("path %q: invalid prefix", path.Prefix))
			continue
		}
		nh, err := ribNextHop(prefix, nodeV6)
		if err != nil {
			p.errs = append(p.errs, err)
			continue
		}
		for _, s := range targets(path, sessions, byName) {
			p.deliver(prefix, nh, path, s, nodeV4)
		}
	}
	return p
}

func ribNextHop(prefix netip.Prefix, nodeV6 netip.Addr) (netip.Addr, error) {
	if prefix.Addr().Is4() {
		return netip.IPv4Unspecified(), nil
	}
	v6 := nodeV6.Unmap()
	if !v6.Is6() || !v6.IsGlobalUnicast() {
		return netip.Addr{}, fmt.Errorf("path %s: no IPv6 next hop: the node has no global IPv6 address", prefix)
	}
	return v6, nil
}

// targets lists the sessions a path goes to: the named ones that exist, or
// all of them. A name with no configured session is skipped: an
// advertisement may name peers this node does not hold.
func targets(path Path, sessions []Session, byName map[string]Session) []Session {
	if len(path.Peers) == 0 {
		return sessions
	}
	var out []Session
	for _, n := range path.Peers {
		if s, ok := byName[n]; ok && !slices.ContainsFunc(out, func(o Session) bool { return o.Name == n }) {
			out = append(out, s)
		}
	}
	return out
}

// deliver merges one path into what session s receives for prefix.
func (p *pathPlan) deliver(prefix netip.Prefix, nh netip.Addr, path Path, s Session, nodeV4 netip.Addr) {
	fam := familyOf(prefix)
	if !s.carries(fam) {
		if !s.FamiliesChosen {
			p.warnings.add(s.Name, fmt.Sprintf("the session does not carry %s: not advertised", fam), prefix)
		}
		return
	}
	del := p.deliveries[prefix]
	if del == nil {
		del = delivery{}
	}
	a, seen := del[s.PeerAddress]
	override, why := sessionNextHop(s, fam, nodeV4)
	if why != "" {
		p.warnings.add(s.Name, why, prefix)
		return
	}
	a.nextHop = override
	// Unnumbered: IPv6 paths take the session's link-local address too
	// (next-hop-self) instead of the node's global one, which the link
	// may not reach.
	a.nextHopSelf = s.Interface != "" && fam == IPv6Unicast
	a.communities = mergeSorted(a.communities, path.Communities, cmp.Compare[uint32])
	a.large = mergeSorted(a.large, path.LargeCommunities, cmpLarge)
	p.mergeLocalPref(&a, path.LocalPref, s, prefix, seen)
	if bw := linkBandwidth(path.Weight); bw > a.linkBW {
		a.linkBW, a.linkAS = bw, s.MyASN // several paths for one session: the largest
	}
	del[s.PeerAddress] = a
	p.deliveries[prefix] = del
	p.rib[prefix] = nh
}

// sessionNextHop is the next hop that overrides the RIB's for paths of
// family fam sent on s (zero: the RIB's), or why they cannot be sent. In
// a VRF it is the node's address there; IPv4 paths on an IPv4 session
// keep the unspecified next hop, which GoBGP replaces with the session's
// local address (in the VRF too, the socket being bound to it).
func sessionNextHop(s Session, fam Family, nodeV4 netip.Addr) (netip.Addr, string) {
	if s.Interface != "" {
		// Unnumbered: GoBGP gives IPv4 paths (next hop 0.0.0.0) the
		// session's link-local address, sent as an RFC 8950 IPv6 next
		// hop.
		return netip.Addr{}, ""
	}
	if s.VRF != "" {
		switch {
		case fam == IPv6Unicast && s.NextHopV6.IsValid():
			return s.NextHopV6, ""
		case fam == IPv6Unicast:
			return netip.Addr{}, fmt.Sprintf("no IPv6 next hop: the node has no global IPv6 address in VRF %s: not advertised", s.VRF)
		case s.PeerAddress.Is4():
			return netip.Addr{}, ""
		case s.NextHopV4.IsValid():
			return s.NextHopV4, ""
		}
		return netip.Addr{}, fmt.Sprintf("no IPv4 next hop for an IPv6 session: the node has no IPv4 address in VRF %s: not advertised", s.VRF)
	}
	if fam == IPv4Unicast && s.PeerAddress.Is6() {
		if v4 := nodeV4.Unmap(); v4.Is4() {
			return v4, ""
		}
		return netip.Addr{}, "no IPv4 next hop for an IPv6 session (the node has no IPv4 address): not advertised"
	}
	return netip.Addr{}, ""
}

func (p *pathPlan) mergeLocalPref(a *attrs, lp *uint32, s Session, prefix netip.Prefix, seen bool) {
	if lp == nil {
		return
	}
	if !s.ibgp() {
		p.warnings.add(s.Name, fmt.Sprintf("localPref %d is not sent: LOCAL_PREF goes to iBGP peers only and this session is eBGP", *lp), prefix)
		return
	}
	if seen && a.hasLocalPref && a.localPref != *lp {
		p.warnings.add(s.Name, "advertisements disagree on localPref: the highest is sent", prefix)
	}
	if !a.hasLocalPref || *lp > a.localPref {
		a.localPref, a.hasLocalPref = *lp, true
	}
}

func familyOf(p netip.Prefix) Family {
	if p.Addr().Is4() {
		return IPv4Unicast
	}
	return IPv6Unicast
}

func cmpLarge(a, b [3]uint32) int {
	return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]), cmp.Compare(a[2], b[2]))
}

// mergeSorted returns the sorted union of a (already sorted and unique) and b.
func mergeSorted[T any](a, b []T, c func(x, y T) int) []T {
	if len(b) == 0 {
		return a
	}
	out := append(slices.Clone(a), b...)
	slices.SortFunc(out, c)
	return slices.CompactFunc(out, func(x, y T) bool { return c(x, y) == 0 })
}
