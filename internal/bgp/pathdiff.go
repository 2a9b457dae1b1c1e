package bgp

import (
	"maps"
	"net/netip"
	"slices"
)

// pathDiff is what Apply must do to GoBGP's RIB and peers, in this order:
// withdraw, install the new policy, announce, then refresh the peers whose
// share of unchanged prefixes changed. (GoBGP exempts withdrawals from
// export policy: every peer of the family gets them, and a router ignores
// the withdrawal of a route it never received, RFC 4271 §9.)
type pathDiff struct {
	withdraw []netip.Prefix
	announce []netip.Prefix // new prefixes and prefixes whose RIB next hop changed
	refresh  []netip.Addr   // peers to soft-reset outbound
}

func diffPaths(oldRib, newRib map[netip.Prefix]netip.Addr, oldDel, newDel map[netip.Prefix]delivery) pathDiff {
	var d pathDiff
	refresh := map[netip.Addr]bool{}
	for p, nh := range newRib {
		old, ok := oldRib[p]
		if !ok || old != nh {
			d.announce = append(d.announce, p)
		}
		if ok {
			markChanged(refresh, oldDel[p], newDel[p])
		}
	}
	for p := range oldRib {
		if _, ok := newRib[p]; !ok {
			d.withdraw = append(d.withdraw, p)
		}
	}
	slices.SortFunc(d.announce, comparePrefix)
	slices.SortFunc(d.withdraw, comparePrefix)
	d.refresh = slices.SortedFunc(maps.Keys(refresh), netip.Addr.Compare)
	return d
}

// markChanged marks every peer whose delivery of one prefix changed: gained,
// lost, or received with other attributes.
func markChanged(refresh map[netip.Addr]bool, old, new delivery) {
	for a, oa := range old {
		na, ok := new[a]
		if !ok || !equalAttrs(oa, na) {
			refresh[a] = true
		}
	}
	for a := range new {
		if _, ok := old[a]; !ok {
			refresh[a] = true
		}
	}
}

func equalAttrs(a, b attrs) bool {
	return slices.Equal(a.communities, b.communities) &&
		slices.Equal(a.large, b.large) &&
		a.localPref == b.localPref && a.hasLocalPref == b.hasLocalPref &&
		a.nextHop == b.nextHop &&
		a.linkBW == b.linkBW && a.linkAS == b.linkAS
}
