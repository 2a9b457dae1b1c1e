package layer2

import (
	"net/netip"
	"path"
	"slices"
)

// Link is what ChooseInterfaces knows about a network interface.
type Link struct {
	Name  string
	Index int
	// Up is true when the link is administratively up and has carrier.
	Up bool
	// MasterIndex is the index of the bridge or bond this link is enslaved
	// to, 0 when it stands alone.
	MasterIndex int
	// Addrs are the link's addresses with their prefix length.
	Addrs []netip.Prefix
}

// DefaultRoutes holds the indexes of the links that carry the main table's
// default route, per family.
type DefaultRoutes struct {
	V4 []int
	V6 []int
}

// Choice is the result of ChooseInterfaces.
type Choice struct {
	// Interfaces are the names of the links to announce the VIP on, sorted.
	Interfaces []string
	// MissingOverrides are the override names that match no link, sorted.
	MissingOverrides []string
}

// ChooseInterfaces decides on which links a VIP is announced.
//
// With an override, the named links are used. Otherwise the links holding an
// address in a subnet that contains the VIP are used (host routes, /32 and
// /128, do not count as subnets), and when there are none, the links of the
// family's default route.
//
// Never chosen, override or not: lo, links enslaved to a bridge or bond, links
// that are down, and links that cannot answer for the family (IPv4 needs an
// IPv4 address on the link, IPv6 a link-local address). Names matching the
// exclude patterns are never chosen by default, but an override may name
// them.
func ChooseInterfaces(links []Link, defaults DefaultRoutes, vip netip.Addr, override, exclude []string) Choice {
	vip = vip.Unmap()
	if !vip.IsValid() {
		return Choice{}
	}
	if len(override) > 0 {
		return chooseOverride(links, vip, override)
	}
	var names []string
	for _, l := range links {
		if usable(l, vip) && !excluded(l.Name, exclude) && holdsSubnetOf(l, vip) {
			names = append(names, l.Name)
		}
	}
	if len(names) == 0 {
		idx := defaults.V4
		if vip.Is6() {
			idx = defaults.V6
		}
		for _, l := range links {
			if slices.Contains(idx, l.Index) && usable(l, vip) && !excluded(l.Name, exclude) {
				names = append(names, l.Name)
			}
		}
	}
	return Choice{Interfaces: sortedUnique(names)}
}

func chooseOverride(links []Link, vip netip.Addr, override []string) Choice {
	var c Choice
	for _, name := range sortedUnique(override) {
		i := slices.IndexFunc(links, func(l Link) bool { return l.Name == name })
		switch {
		case i < 0:
			c.MissingOverrides = append(c.MissingOverrides, name)
		case usable(links[i], vip):
			c.Interfaces = append(c.Interfaces, name)
		}
	}
	return c
}

// usable reports whether l may ever answer for vip: the rules no override
// can lift.
func usable(l Link, vip netip.Addr) bool {
	if l.Name == "lo" || !l.Up || l.MasterIndex != 0 {
		return false
	}
	for _, p := range l.Addrs {
		a := p.Addr()
		if vip.Is4() && a.Is4() {
			return true
		}
		if vip.Is6() && a.Is6() && a.IsLinkLocalUnicast() {
			return true
		}
	}
	return false
}

func excluded(name string, patterns []string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

func holdsSubnetOf(l Link, vip netip.Addr) bool {
	for _, p := range l.Addrs {
		if p.Bits() < p.Addr().BitLen() && p.Masked().Contains(vip) {
			return true
		}
	}
	return false
}

func sortedUnique(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}
