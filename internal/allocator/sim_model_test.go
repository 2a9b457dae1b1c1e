package allocator

import (
	"cmp"
	"maps"
	"math"
	"math/big"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/herald-lb/herald/internal/iprange"
	"github.com/herald-lb/herald/internal/service"
)

// The model: what the rules say should happen, computed by brute force
// from the configuration, the requests and a snapshot of assignments.

func modelOrdered(pools []Pool) []Pool {
	out := slices.Clone(pools)
	slices.SortStableFunc(out, func(a, b Pool) int {
		if (a.Priority == nil) != (b.Priority == nil) {
			if a.Priority == nil {
				return 1
			}
			return -1
		}
		if a.Priority != nil && *a.Priority != *b.Priority {
			return cmp.Compare(*a.Priority, *b.Priority)
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

func modelAdmits(p Pool, req service.Request) bool {
	if p.Closed || (len(p.Namespaces) > 0 && !slices.Contains(p.Namespaces, req.Namespace)) {
		return false
	}
	if len(p.NamespaceSelectors) > 0 && !slices.ContainsFunc(p.NamespaceSelectors, func(s labels.Selector) bool { return s.Matches(req.NamespaceLabels) }) {
		return false
	}
	return len(p.ServiceSelectors) == 0 || slices.ContainsFunc(p.ServiceSelectors, func(s labels.Selector) bool { return s.Matches(req.Labels) })
}

func modelContains(p Pool, ip netip.Addr) bool {
	return slices.ContainsFunc(p.Ranges, func(r iprange.Range) bool { return r.Contains(ip) })
}

func modelRanges(p Pool, f corev1.IPFamily) []iprange.Range {
	var out []iprange.Range
	for _, r := range iprange.Merge(p.Ranges) {
		if familyOf(r.First) == f {
			out = append(out, r)
		}
	}
	return out
}

// modelValid says whether the request's count and addresses make sense:
// AddressCount addresses (one without it) of each family requested.
func modelValid(req service.Request) bool {
	if req.AddressCount < 0 || req.AddressCount > service.MaxAddressCount {
		return false
	}
	if !modelAddrsValid(req, req.RequestedIPs) || !evenly(req.RequestedIPs, countOf(&req)) {
		return false
	}
	return !(len(familySet(req.RequestedIPs)) == 1 && req.FamilyPolicy == corev1.IPFamilyPolicyRequireDualStack)
}

// modelAddrsValid: no address twice, each of the Service's families.
func modelAddrsValid(req service.Request, ips []netip.Addr) bool {
	seen := map[netip.Addr]bool{}
	for _, ip := range ips {
		if seen[ip] || !slices.Contains(req.Families, familyOf(ip)) {
			return false
		}
		seen[ip] = true
	}
	return true
}

// modelChoices are the family lists that satisfy req.
func modelChoices(req service.Request) [][]corev1.IPFamily {
	if len(req.RequestedIPs) > 0 {
		return [][]corev1.IPFamily{familySet(orderByFamilies(req.RequestedIPs, req.Families))}
	}
	switch {
	case req.FamilyPolicy == corev1.IPFamilyPolicySingleStack:
		return [][]corev1.IPFamily{req.Families[:1]}
	case req.FamilyPolicy == corev1.IPFamilyPolicyPreferDualStack && len(req.Families) == 2:
		return [][]corev1.IPFamily{req.Families, req.Families[:1]}
	default:
		return [][]corev1.IPFamily{req.Families}
	}
}

// othersHolding returns the keys other than key holding each address.
func othersHolding(before map[string]Assignment, key string) map[netip.Addr][]string {
	others := maps.Clone(before)
	delete(others, key)
	return heldBy(others)
}

// modelSatisfies says whether old still answers req (Assign must keep it).
func (s *sim) modelSatisfies(old Assignment, req service.Request, before map[string]Assignment) bool {
	fams := familySet(old.IPs)
	switch {
	case !slices.ContainsFunc(modelChoices(req), func(c []corev1.IPFamily) bool { return slices.Equal(c, fams) }):
		return false
	case !evenly(old.IPs, countOf(&req)):
		return false
	case len(req.RequestedIPs) > 0 && !slices.Equal(old.IPs, orderByFamilies(req.RequestedIPs, req.Families)):
		return false
	case req.Pool != "" && old.Pool != req.Pool:
		return false
	case s.reqs[req.Key].SharingKey != req.SharingKey:
		return false
	}
	others := othersHolding(before, req.Key)
	for _, ip := range old.IPs {
		for _, k := range others[ip] {
			if s.since[k] < s.since[req.Key] && !s.modelCompatible(req, nil, k, before) {
				return false // a later holder that clashes yields instead
			}
		}
	}
	return true
}

// modelDisplaced lists the later holders of old's addresses a kept
// request clashes with, sorted.
func (s *sim) modelDisplaced(old Assignment, req service.Request, before map[string]Assignment) []string {
	var out []string
	others := othersHolding(before, req.Key)
	for _, ip := range old.IPs {
		for _, k := range others[ip] {
			if s.since[k] > s.since[req.Key] && !s.modelCompatible(req, nil, k, before) && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// modelCompatible says whether a Service asking req (holding ips, when
// restored, else what req asks) may share an address with k, which holds
// what snap says. A Service's count is what it holds of a family.
func (s *sim) modelCompatible(req service.Request, ips []netip.Addr, k string, snap map[string]Assignment) bool {
	x := newHolder(&req)
	if ips != nil {
		x.count = perFamily(ips)
	}
	y := s.modelHolder(k, snap)
	ok, _ := compatible(x, y)
	return ok
}

// modelHolder is what the model knows of k's hold in snap.
func (s *sim) modelHolder(k string, snap map[string]Assignment) *holder {
	r := s.reqs[k]
	h := newHolder(&r)
	h.count = perFamily(snap[k].IPs)
	return h
}

// expectNew is where a request without a sharing key must land when it
// gets new addresses.
func (s *sim) expectNew(req service.Request, before map[string]Assignment) (string, []netip.Addr, bool) {
	held := othersHolding(before, req.Key)
	ordered := modelOrdered(s.pools)
	if len(req.RequestedIPs) > 0 {
		return s.expectRequested(req, ordered, held)
	}
	for _, fams := range modelChoices(req) {
		for _, p := range ordered {
			if (req.Pool != "" && p.Name != req.Pool) || (req.Pool == "" && !p.AutoAssign) || !modelAdmits(p, req) {
				continue
			}
			if ips, ok := modelOffer(p, fams, countOf(&req), held); ok {
				return p.Name, ips, true
			}
		}
	}
	return "", nil, false
}

func (s *sim) expectRequested(req service.Request, ordered []Pool, held map[netip.Addr][]string) (string, []netip.Addr, bool) {
	ips := orderByFamilies(req.RequestedIPs, req.Families)
	for _, ip := range ips {
		if len(held[ip]) > 0 {
			return "", nil, false
		}
	}
	for _, p := range ordered {
		if req.Pool != "" && p.Name != req.Pool {
			continue
		}
		if !slices.ContainsFunc(ips, func(ip netip.Addr) bool { return !modelContains(p, ip) }) {
			if modelAdmits(p, req) {
				return p.Name, ips, true
			}
			if req.Pool != "" {
				return "", nil, false
			}
		}
	}
	return "", nil, false
}

// modelOffer walks p's ranges for the n lowest free addresses of each
// family: all of them or none.
func modelOffer(p Pool, fams []corev1.IPFamily, n int, held map[netip.Addr][]string) ([]netip.Addr, bool) {
	var out []netip.Addr
	for _, f := range fams {
		ips, ok := modelLowestFree(p, f, n, held)
		if !ok {
			return nil, false
		}
		out = append(out, ips...)
	}
	return out, true
}

func modelLowestFree(p Pool, f corev1.IPFamily, n int, held map[netip.Addr][]string) ([]netip.Addr, bool) {
	var out []netip.Addr
	for _, r := range modelRanges(p, f) {
		for z := r.First; r.Contains(z) && len(out) < n; z = z.Next() {
			if len(held[z]) == 0 && !modelSkips(p, z) {
				out = append(out, z)
			}
		}
	}
	return out, len(out) == n
}

// restoreExpected says whether Restore must succeed, and with which pool.
func (s *sim) restoreExpected(req service.Request, pool string, ips []netip.Addr, before map[string]Assignment) (bool, string) {
	if len(ips) == 0 || !modelAddrsValid(req, ips) || perFamily(ips) > service.MaxAddressCount {
		return false, ""
	}
	pool = s.modelRestoredPool(req, pool, ips)
	others := othersHolding(before, req.Key)
	for _, ip := range ips {
		for _, k := range others[ip] {
			if before[k].Pool != pool || !s.modelCompatible(req, ips, k, before) {
				return false, ""
			}
			if f := familyOf(ip); !slices.Equal(ofFamily(orderByFamilies(ips, req.Families), f), ofFamily(before[k].IPs, f)) {
				return false, "" // it would share part of k's addresses
			}
		}
	}
	return true, pool
}

// modelRestoredPool: the named pool if it contains every address, else
// the first containing them all; with every address in no pool, the pool
// recording one as held outside its ranges (modelOutsideOwner); with
// some addresses in no pool, the named pool if it contains the rest, else the first containing the rest, else
// the pool of the first address (in the Service's family order, ascending
// within a family) in some pool.
func (s *sim) modelRestoredPool(req service.Request, named string, ips []netip.Addr) string {
	all := func(p Pool, ips []netip.Addr) bool {
		return !slices.ContainsFunc(ips, func(ip netip.Addr) bool { return !modelContains(p, ip) })
	}
	ordered := modelOrdered(s.pools)
	var inside []netip.Addr // the first family first, ascending within one
	for _, ip := range orderByFamilies(ips, req.Families) {
		if slices.ContainsFunc(ordered, func(p Pool) bool { return modelContains(p, ip) }) {
			inside = append(inside, ip)
		}
	}
	if len(inside) == 0 {
		return modelOutsideOwner(ordered, named, ips)
	}
	if i := slices.IndexFunc(ordered, func(p Pool) bool { return p.Name == named }); i >= 0 && all(ordered[i], inside) {
		return named
	}
	for _, p := range ordered {
		if all(p, inside) {
			return p.Name
		}
	}
	for _, p := range ordered {
		if modelContains(p, inside[0]) {
			return p.Name
		}
	}
	return ""
}

// modelUsage counts a pool's addresses from a snapshot.
func (s *sim) modelUsage(name string, snap map[string]Assignment) Usage {
	var u Usage
	var p *Pool
	if i := slices.IndexFunc(s.pools, func(p Pool) bool { return p.Name == name }); i >= 0 {
		p = &s.pools[i]
	}
	fam := func(u *Usage, ip netip.Addr) *FamilyUsage {
		if ip.Is4() {
			return &u.IPv4
		}
		return &u.IPv6
	}
	held := heldBy(snap)
	for ip, keys := range held {
		if snap[keys[0]].Pool == name {
			if p != nil && modelContains(*p, ip) {
				fam(&u, ip).Assigned++
			} else {
				u.OutsideRanges++
			}
		}
	}
	if p == nil {
		return u
	}
	for _, f := range []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol} {
		free := new(big.Int)
		for _, r := range modelRanges(*p, f) {
			free.Add(free, modelEligible(*p, r))
		}
		for ip := range held {
			if familyOf(ip) == f && modelContains(*p, ip) && !modelSkips(*p, ip) {
				free.Sub(free, big.NewInt(1))
			}
		}
		fu := &u.IPv4
		if f == corev1.IPv6Protocol {
			fu = &u.IPv6
		}
		fu.Available = math.MaxUint64
		if free.IsUint64() {
			fu.Available = free.Uint64()
		}
	}
	return u
}

// modelEligible counts by enumeration (IPv4 ranges in the simulation are
// small; IPv6 has no .0/.255 rule, only reserved addresses).
func modelEligible(p Pool, r iprange.Range) *big.Int {
	if !r.Is4() {
		n := r.Size()
		seen := map[netip.Addr]bool{}
		for _, z := range p.Reserved {
			if r.Contains(z) && !seen[z] {
				seen[z] = true
				n.Sub(n, big.NewInt(1))
			}
		}
		return n
	}
	n := int64(0)
	for z := r.First; r.Contains(z); z = z.Next() {
		if !modelSkips(p, z) {
			n++
		}
	}
	return big.NewInt(n)
}

// modelSkips: an address the pool hands out only on request.
func modelSkips(p Pool, z netip.Addr) bool {
	return p.AvoidBuggyIPs && isBuggy(z) || slices.Contains(p.Reserved, z)
}

// modelReshape is where a changed request that may keep part of old's
// addresses lands (see reshape): the addresses of the families it still
// wants stay (the lowest count of each), a missing family, or the
// addresses a larger count adds, come from old's pool.
func (s *sim) modelReshape(old Assignment, req service.Request, before map[string]Assignment) (string, []netip.Addr, bool) {
	k, ok := s.modelKept(old, req, before)
	if !ok {
		return "", nil, false
	}
	n, fams, p := countOf(&req), modelChoices(req)[0], k.pool
	held := heldBy(before)
	added, ok := modelOffer(p, k.missing, n, held)
	for _, f := range fams {
		more, found := modelLowestFree(p, f, k.short[f], held)
		added, ok = append(added, more...), ok && found
	}
	if !ok {
		return "", nil, false
	}
	return old.Pool, orderByFamilies(append(k.kept, added...), fams), true
}

// modelKeep is what a changed request keeps of old (see reshape): the
// addresses, the families it lacks, how many more of a family it needs,
// and old's pool, which must still serve it.
type modelKeep struct {
	kept    []netip.Addr
	missing []corev1.IPFamily
	short   map[corev1.IPFamily]int
	pool    Pool
}

func (s *sim) modelKept(old Assignment, req service.Request, before map[string]Assignment) (modelKeep, bool) {
	if len(req.RequestedIPs) > 0 || (req.Pool != "" && old.Pool != req.Pool) {
		return modelKeep{}, false
	}
	n := countOf(&req)
	k := modelKeep{short: map[corev1.IPFamily]int{}}
	for _, f := range modelChoices(req)[0] {
		have := ofFamily(old.IPs, f)
		switch {
		case len(have) == 0:
			k.missing = append(k.missing, f)
		case len(have) >= n:
			k.kept = append(k.kept, have[:n]...)
		default:
			k.kept = append(k.kept, have...)
			k.short[f] = n - len(have)
		}
	}
	if len(k.kept) == 0 || !s.modelMayKeep(k.kept, req, othersHolding(before, req.Key), before) {
		return modelKeep{}, false
	}
	for _, p := range s.pools {
		if p.Name == old.Pool && (req.Pool != "" || p.AutoAssign) && modelAdmits(p, req) && modelHasFamilies(p, familySet(k.kept)) {
			k.pool = p
			return k, true
		}
	}
	return modelKeep{}, false
}

func (s *sim) modelMayKeep(ips []netip.Addr, req service.Request, others map[netip.Addr][]string, snap map[string]Assignment) bool {
	for _, ip := range ips {
		for _, k := range others[ip] {
			if !s.modelCompatible(req, nil, k, snap) {
				return false
			}
		}
	}
	return true
}

func modelHasFamilies(p Pool, fams []corev1.IPFamily) bool {
	for _, f := range fams {
		if len(modelRanges(p, f)) == 0 {
			return false
		}
	}
	return true
}

// modelOutsideOwner: the first pool in order recording one of ips as held
// outside its ranges; else named if no pool of that name is configured
// or it has no record; else no pool.
func modelOutsideOwner(ordered []Pool, named string, ips []netip.Addr) string {
	for _, p := range ordered {
		if slices.ContainsFunc(ips, func(ip netip.Addr) bool { return slices.Contains(p.HeldOutside, ip) }) {
			return p.Name
		}
	}
	i := slices.IndexFunc(ordered, func(p Pool) bool { return p.Name == named })
	if i < 0 || ordered[i].OutsideUnrecorded {
		return named
	}
	return ""
}
