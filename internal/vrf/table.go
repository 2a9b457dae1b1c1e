package vrf

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Link is one network interface of the node, as netlink lists it.
type Link struct {
	Name   string
	Index  int
	Master int    // index of the device it is enslaved to; 0: none
	Kind   string // "vrf" for a VRF device
	Up     bool
	Addrs  []netip.Prefix
}

// Table is the node's VRFs by name, with the interfaces enslaved to each.
// It compares equal (Key) to another snapshot exactly when no next hop
// choice can differ.
type Table struct {
	vrfs  map[string]VRF
	kinds map[string]string // every link's kind by name, to say what a name is when it is no VRF
}

// VRF is one VRF device and its interfaces, sorted by name.
type VRF struct {
	Name       string
	Up         bool
	Addrs      []netip.Prefix // on the VRF device itself
	Interfaces []Link
}

// NextHops are the node's addresses in a VRF, one per family; a family
// the VRF has no usable address of is the zero Addr.
type NextHops struct {
	V4, V6 netip.Addr
}

// FromLinks builds the table from the node's links.
func FromLinks(links []Link) Table {
	t := Table{vrfs: map[string]VRF{}, kinds: map[string]string{}}
	byIndex := map[int]string{}
	for _, l := range links {
		t.kinds[l.Name] = l.Kind
		if l.Kind == "vrf" {
			byIndex[l.Index] = l.Name
			t.vrfs[l.Name] = VRF{Name: l.Name, Up: l.Up, Addrs: sortedPrefixes(l.Addrs)}
		}
	}
	for _, l := range links {
		name, ok := byIndex[l.Master]
		if !ok || l.Master == 0 {
			continue
		}
		v := t.vrfs[name]
		l.Addrs = sortedPrefixes(l.Addrs)
		v.Interfaces = append(v.Interfaces, l)
		t.vrfs[name] = v
	}
	for n, v := range t.vrfs {
		slices.SortFunc(v.Interfaces, func(a, b Link) int { return cmp.Compare(a.Name, b.Name) })
		t.vrfs[n] = v
	}
	return t
}

// NextHops chooses the node's addresses in VRF name for a session to
// peer: per family, a global unicast address of an interface that is up
// and enslaved to the VRF, preferring one whose subnet holds the peer
// (the interface the session leaves by), then the first by interface
// name and address; then an address of the VRF device itself. The error
// says what is missing, for the session's status.
func (t Table) NextHops(name string, peer netip.Addr) (NextHops, error) {
	v, ok := t.vrfs[name]
	if !ok {
		if kind, exists := t.kinds[name]; exists {
			return NextHops{}, fmt.Errorf("%s is not a VRF device (its kind is %q)", name, kindName(kind))
		}
		return NextHops{}, fmt.Errorf("VRF %s does not exist", name)
	}
	if !v.Up {
		return NextHops{}, fmt.Errorf("VRF %s is down", name)
	}
	var cands []netip.Prefix
	for _, l := range v.Interfaces {
		if l.Up {
			cands = append(cands, l.Addrs...)
		}
	}
	cands = append(cands, v.Addrs...)
	nh := NextHops{V4: choose(cands, peer, true), V6: choose(cands, peer, false)}
	if !nh.V4.IsValid() && !nh.V6.IsValid() {
		return nh, fmt.Errorf("VRF %s has no interface that is up with a global address (enslaved: %s)", name, ifNames(v.Interfaces))
	}
	return nh, nil
}

// choose picks the address of one family among cands (in order of
// preference): the first whose subnet holds peer, else the first.
func choose(cands []netip.Prefix, peer netip.Addr, v4 bool) netip.Addr {
	var first netip.Addr
	for _, p := range cands {
		a := p.Addr().Unmap()
		if a.Is4() != v4 || !a.IsGlobalUnicast() {
			continue
		}
		if p.Contains(peer.Unmap()) {
			return a
		}
		if !first.IsValid() {
			first = a
		}
	}
	return first
}

// Key is a canonical text form of the table.
func (t Table) Key() string {
	var b strings.Builder
	for _, n := range sortedNames(t.vrfs) {
		v := t.vrfs[n]
		fmt.Fprintf(&b, "%s up=%t %v", n, v.Up, v.Addrs)
		for _, l := range v.Interfaces {
			fmt.Fprintf(&b, " [%s up=%t %v]", l.Name, l.Up, l.Addrs)
		}
		b.WriteString(";")
	}
	return b.String()
}

func sortedPrefixes(ps []netip.Prefix) []netip.Prefix {
	out := slices.Clone(ps)
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
	})
	return out
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func ifNames(ls []Link) string {
	if len(ls) == 0 {
		return "none"
	}
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.Name
	}
	return strings.Join(names, ", ")
}

func kindName(k string) string {
	if k == "" {
		return "device"
	}
	return k
}
