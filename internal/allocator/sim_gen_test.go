package allocator

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/herald-lb/herald/internal/iprange"
	"github.com/herald-lb/herald/internal/service"
)

// Generators for the simulation. The address space is small on purpose, so
// that pools fill up, addresses are shared and reused, and pools overlap
// after some SetPools.

func simNamespaces() []string { return []string{"red", "blue", "green"} }

func (s *sim) allKeys() []string {
	var keys []string
	for _, ns := range simNamespaces() {
		for i := range 8 {
			keys = append(keys, fmt.Sprintf("%s/s%d", ns, i))
		}
	}
	return keys
}

func (s *sim) genKey() string {
	keys := s.allKeys()
	return keys[s.src.intn(len(keys))]
}

// simRangeVariants are, per pool name, the range sets SetPools picks from.
func simRangeVariants(name string) [][]string {
	return map[string][][]string{
		"a": {{"198.51.100.0/28"}, {"198.51.100.0/29"}, {"198.51.100.8-198.51.100.23"}},
		"b": {{"198.51.100.16/28", "2001:db8::/124"}, {"2001:db8::/124"}, {"198.51.100.16/29", "2001:db8::8/125"}},
		"c": {{"2001:db8:1::/64", "198.51.100.250-198.51.101.5"}, {"2001:db8:1::/64"}, {"198.51.100.252-198.51.101.2", "2001:db8:1::/120"}},
		"d": {{"198.51.100.32/29"}, {"198.51.100.32/30", "2001:db8:2::/126"}},
	}[name]
}

func (s *sim) genPools() []Pool {
	var pools []Pool
	for _, name := range []string{"a", "b", "c", "d"} {
		if s.src.intn(6) == 0 {
			continue
		}
		variants := simRangeVariants(name)
		p := Pool{Name: name, AutoAssign: s.src.intn(5) != 0, AvoidBuggyIPs: s.src.intn(3) == 0, Closed: s.src.intn(8) == 0}
		for _, text := range variants[s.src.intn(len(variants))] {
			r := mustRangeOf(text)
			p.Ranges = append(p.Ranges, r)
			if !r.Is4() && s.src.intn(2) == 0 {
				p.Reserved = append(p.Reserved, r.First) // as for an IPv6 CIDR
			}
		}
		if s.src.intn(3) == 0 {
			p.ShareAcrossNamespaces = [][]string{{AllNamespaces}, simNamespaces()[:2]}[s.src.intn(2)]
		}
		if s.src.intn(3) != 0 {
			prio := int32(s.src.intn(3))
			p.Priority = &prio
		}
		s.genAdmission(&p)
		pools = append(pools, p)
	}
	return pools
}

func (s *sim) genAdmission(p *Pool) {
	if s.src.intn(4) == 0 {
		p.Namespaces = []string{simNamespaces()[s.src.intn(3)]}
	}
	if s.src.intn(5) == 0 {
		team := []string{"x", "y"}[s.src.intn(2)]
		p.NamespaceSelectors = []labels.Selector{labels.SelectorFromSet(labels.Set{"team": team})}
	}
	if s.src.intn(5) == 0 {
		p.ServiceSelectors = []labels.Selector{labels.SelectorFromSet(labels.Set{"tier": "web"})}
	}
}

func mustRangeOf(text string) iprange.Range {
	r, err := iprange.Parse(text)
	if err != nil {
		panic(err)
	}
	return r
}

func (s *sim) genPoolName() string {
	names := []string{"", "a", "b", "c", "d", "zz"}
	return names[s.src.intn(len(names))]
}

// simAddrs are the addresses requests and restores name, per family: in
// pools, outside them, and .0/.255.
func simAddrs(f corev1.IPFamily) []string {
	if f == corev1.IPv4Protocol {
		return []string{"198.51.100.1", "198.51.100.9", "198.51.100.15", "198.51.100.17", "198.51.100.33",
			"198.51.100.255", "198.51.101.0", "198.51.101.1", "198.51.100.200"}
	}
	return []string{"2001:db8::3", "2001:db8::f", "2001:db8:1::", "2001:db8:1::1", "2001:db8:2::1", "2001:db8:9::1"}
}

// genAddrs picks up to n addresses, one per family of fams (rarely one of
// a family the Service does not have, or two of one family).
func (s *sim) genAddrs(fams []corev1.IPFamily, n int) []netip.Addr {
	var out []netip.Addr
	for i := 0; i < n && i < len(fams); i++ {
		f := fams[i]
		if s.src.intn(25) == 0 {
			f = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}[s.src.intn(2)]
		}
		list := simAddrs(f)
		out = append(out, netip.MustParseAddr(list[s.src.intn(len(list))]))
	}
	return out
}

func (s *sim) genFamilies(r *service.Request) {
	four, six := corev1.IPv4Protocol, corev1.IPv6Protocol
	switch s.src.intn(8) {
	case 0, 1, 2:
		r.FamilyPolicy, r.Families = corev1.IPFamilyPolicySingleStack, []corev1.IPFamily{four}
	case 3:
		r.FamilyPolicy, r.Families = corev1.IPFamilyPolicySingleStack, []corev1.IPFamily{six}
	case 4:
		r.FamilyPolicy, r.Families = corev1.IPFamilyPolicyRequireDualStack, []corev1.IPFamily{four, six}
	case 5:
		r.FamilyPolicy, r.Families = corev1.IPFamilyPolicyRequireDualStack, []corev1.IPFamily{six, four}
	case 6:
		r.FamilyPolicy, r.Families = corev1.IPFamilyPolicyPreferDualStack, []corev1.IPFamily{four, six}
	default:
		r.FamilyPolicy, r.Families = corev1.IPFamilyPolicyPreferDualStack, []corev1.IPFamily{six}
	}
}

func (s *sim) genRequest() service.Request {
	key := s.genKey()
	ns := key[:len(key)-3]
	r := service.Request{Key: key, Namespace: ns, NamespaceLabels: labels.Set{"team": map[string]string{"red": "x", "blue": "y"}[ns]}}
	s.genFamilies(&r)
	if s.src.intn(2) == 0 {
		r.Labels = labels.Set{"tier": "web"}
	}
	r.AddressCount = s.genCount(key)
	if s.src.intn(5) == 0 {
		r.RequestedIPs = s.genRequested(r.Families, max(r.AddressCount, 1))
	}
	if s.src.intn(5) == 0 {
		r.Pool = s.genPoolName()
	}
	if s.src.intn(3) == 0 {
		r.SharingKey = []string{"k1", "k2"}[s.src.intn(2)]
	}
	all := []service.Port{{Protocol: corev1.ProtocolTCP, Port: 80}, {Protocol: corev1.ProtocolTCP, Port: 443}, {Protocol: corev1.ProtocolUDP, Port: 53}, {Protocol: corev1.ProtocolTCP, Port: 53}, {Protocol: "", Port: 8080}}
	for range 1 + s.src.intn(2) {
		r.Ports = append(r.Ports, all[s.src.intn(len(all))])
	}
	if s.src.intn(5) == 0 {
		r.ETPLocal = true
	}
	if s.src.intn(2) == 0 {
		r.Selector = map[string]string{"app": []string{"x", "y"}[s.src.intn(2)]}
	}
	return r
}

// simMaxCount is the largest address count the simulation asks for: the
// pools are small, so that several per family fill them.
const simMaxCount = 4

// genCount draws an address count (herald.dev/address-count): mostly the
// one the key asked for last, so that Services keep their count for a
// while, share under it and sometimes change it; 0 is the annotation's
// absence, and rarely a count out of range.
func (s *sim) genCount(key string) int {
	switch s.src.intn(12) {
	case 0, 1:
		s.counts[key] = s.src.intn(simMaxCount + 1)
	case 2:
		if s.src.intn(4) == 0 {
			return []int{-1, service.MaxAddressCount + 1}[s.src.intn(2)]
		}
	}
	return s.counts[key]
}

// genRequested picks n addresses of the first family, or of each family
// (rarely one more or one less, or one twice): runs of consecutive
// addresses, so that they often lie in one pool, or scattered ones.
func (s *sim) genRequested(fams []corev1.IPFamily, n int) []netip.Addr {
	var out []netip.Addr
	for _, f := range fams[:1+s.src.intn(len(fams))] {
		k := n
		if s.src.intn(15) == 0 {
			k += []int{-1, 1}[s.src.intn(2)]
		}
		run := s.src.intn(2) == 0
		var ip netip.Addr
		for i := range k {
			if i == 0 || !run {
				ip = s.genAddrs([]corev1.IPFamily{f}, 1)[0]
			} else {
				ip = ip.Next()
			}
			out = append(out, ip)
		}
	}
	return out
}
