package config

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/iprange"
)

const kindPool = "IPAddressPool"

// buildPools parses every pool, then admits them oldest first: a pool that
// overlaps an already admitted (older) pool is reported Conflicting and
// left out.
func buildPools(in []*v1beta1.IPAddressPool, ps *problems) map[string]*Pool {
	sorted := append([]*v1beta1.IPAddressPool(nil), in...)
	sort.SliceStable(sorted, func(i, j int) bool { return older(sorted[i], sorted[j]) })
	out := map[string]*Pool{}
	var admitted []*Pool
	for _, obj := range sorted {
		p, ok := parsePool(obj, ps)
		if !ok {
			continue
		}
		if prev, field := firstOverlap(p, admitted); prev != nil {
			ps.add(Problem{Kind: kindPool, Name: p.Name, Field: field, Reason: ReasonConflicting, Ignored: true,
				ConflictsWith: prev.Name,
				Message:       fmt.Sprintf("addresses overlap IPAddressPool %s, which is older; this pool is left out until the overlap is removed", prev.Name)})
			continue
		}
		admitted = append(admitted, p)
		out[p.Name] = p
	}
	return out
}

func older(a, b *v1beta1.IPAddressPool) bool {
	ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return a.Name < b.Name
}

func parsePool(obj *v1beta1.IPAddressPool, ps *problems) (*Pool, bool) {
	p := &Pool{
		Name:          obj.Name,
		Labels:        obj.Labels,
		Created:       obj.CreationTimestamp.Time,
		AutoAssign:    obj.Spec.AutoAssign == nil || *obj.Spec.AutoAssign,
		AvoidBuggyIPs: obj.Spec.AvoidBuggyIPs,
		Deleting:      obj.DeletionTimestamp != nil,
	}
	bad := func(field, msg string) (*Pool, bool) {
		ps.add(Problem{Kind: kindPool, Name: obj.Name, Field: field, Reason: ReasonInvalidField, Message: msg, Ignored: true})
		return nil, false
	}
	p.Outside, p.OutsideUnrecorded = outsideRecord(obj)
	if len(obj.Spec.Addresses) == 0 {
		return bad("spec.addresses", "no addresses")
	}
	for i, s := range obj.Spec.Addresses {
		r, err := iprange.Parse(s)
		if err != nil {
			return bad(fmt.Sprintf("spec.addresses[%d]", i), err.Error())
		}
		for j, prev := range p.Ranges {
			if prev.Overlaps(r) {
				return bad(fmt.Sprintf("spec.addresses[%d]", i), fmt.Sprintf("%s overlaps spec.addresses[%d] (%s)", s, j, obj.Spec.Addresses[j]))
			}
		}
		p.Ranges = append(p.Ranges, r)
		if a, ok := subnetRouterAnycast(s); ok {
			p.SubnetRouterAnycast = append(p.SubnetRouterAnycast, a)
		}
	}
	sort.Slice(p.SubnetRouterAnycast, func(i, j int) bool { return p.SubnetRouterAnycast[i].Less(p.SubnetRouterAnycast[j]) })
	sort.Slice(p.Ranges, func(i, j int) bool { return p.Ranges[i].Compare(p.Ranges[j]) < 0 })
	if a := obj.Spec.ServiceAllocation; a != nil {
		p.Priority = a.Priority
		p.Namespaces = append([]string(nil), a.Namespaces...)
		sort.Strings(p.Namespaces)
		var err error
		if p.NamespaceSelectors, err = selectors(a.NamespaceSelectors, "spec.serviceAllocation.namespaceSelectors"); err != nil {
			return bad(err.(fieldError).field, err.Error())
		}
		if p.ServiceSelectors, err = selectors(a.ServiceSelectors, "spec.serviceAllocation.serviceSelectors"); err != nil {
			return bad(err.(fieldError).field, err.Error())
		}
	}
	p.LocalFallback = v1beta1.LocalFallbackSomePorts
	if sh := obj.Spec.Sharing; sh != nil {
		p.ShareAcrossNamespaces = append([]string(nil), sh.AcrossNamespaces...)
		sort.Strings(p.ShareAcrossNamespaces)
		switch sh.LocalFallback {
		case "":
		case v1beta1.LocalFallbackSomePorts, v1beta1.LocalFallbackNone:
			p.LocalFallback = sh.LocalFallback
		default:
			return bad("spec.sharing.localFallback", fmt.Sprintf("%q is neither SomePorts nor None", sh.LocalFallback))
		}
	}
	return p, true
}

// firstOverlap returns the first admitted pool that overlaps p, and the
// field of p that overlaps.
func firstOverlap(p *Pool, admitted []*Pool) (*Pool, string) {
	for _, prev := range admitted {
		for i, r := range p.Ranges {
			for _, pr := range prev.Ranges {
				if r.Overlaps(pr) {
					return prev, fmt.Sprintf("spec.addresses (%s)", p.Ranges[i])
				}
			}
		}
	}
	return nil, ""
}

// subnetRouterAnycast returns the all-zeros address of an IPv6 CIDR entry,
// the subnet-router anycast address of RFC 4291 (2.6.1), which routers of
// the prefix answer: a host given it may be unreachable. /127 (RFC 6164)
// and /128 have none to spare.
func subnetRouterAnycast(entry string) (netip.Addr, bool) {
	p, err := netip.ParsePrefix(entry)
	if err != nil || !p.Addr().Is6() || p.Bits() >= 127 {
		return netip.Addr{}, false
	}
	return p.Masked().Addr(), true
}

// outsideRecord reads the controller's record of the addresses held from
// the pool outside its ranges, sorted, and whether the status lacks a
// current one: it describes an older generation than the pool's (or none),
// or its list disagrees with its count (written by a version without the
// list).
func outsideRecord(obj *v1beta1.IPAddressPool) ([]netip.Addr, bool) {
	st := obj.Status
	var out []netip.Addr
	for _, s := range st.AddressesOutsideRanges {
		if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	out = slices.Compact(out)
	stale := st.ObservedGeneration == 0 || st.ObservedGeneration < obj.Generation ||
		int64(len(st.AddressesOutsideRanges)) != st.OutsideRanges
	return out, stale
}
