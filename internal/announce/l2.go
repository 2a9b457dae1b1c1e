package announce

import (
	"net/netip"
	"slices"
	"sort"

	"github.com/herald-lb/herald/internal/config"
)

// L2Owner is the node that answers ARP/NDP for one address.
type L2Owner struct {
	IP   netip.Addr
	Node string
	// Interfaces overrides the interface choice; empty means the default.
	Interfaces []string
	// Services holding the address, sorted.
	Services []string
}

// L2Result is the L2 decision for every address, and why some addresses
// have no owner.
type L2Result struct {
	Owners []L2Owner // sorted by address
	// Unowned maps an address that some L2Advertisement covers to the
	// reason no node announces it.
	Unowned map[netip.Addr]string
	// Uncovered lists addresses no L2Advertisement covers.
	Uncovered []netip.Addr
}

// L2 decides the owner of every address.
func L2(st State) L2Result {
	res := L2Result{Unowned: map[netip.Addr]string{}}
	nodes := st.nodes()
	for _, h := range st.holders() {
		res.add(decideL2(st, nodes, h.ip, h.svcs))
	}
	return res
}

// l2Decision is the decision for one address: an owner, or the reason
// there is none (ReasonNoEligibleNode), or no L2Advertisement covering it.
type l2Decision struct {
	owner     L2Owner
	unowned   string
	uncovered bool
}

// add appends one address's decision to the result, in address order.
func (res *L2Result) add(d l2Decision) {
	switch {
	case d.uncovered:
		res.Uncovered = append(res.Uncovered, d.owner.IP)
	case d.unowned != "":
		res.Unowned[d.owner.IP] = d.unowned
	default:
		res.Owners = append(res.Owners, d.owner)
	}
}

// decideL2 decides the owner of ip, held by svcs (sorted by key). It
// depends on nothing else than the configuration, the nodes and their
// liveness.
func decideL2(st State, nodes []node, ip netip.Addr, svcs []*Service) l2Decision {
	d := l2Decision{owner: L2Owner{IP: ip}}
	ads := st.l2AdsFor(ip, svcs)
	if len(ads) == 0 {
		d.uncovered = true
		return d
	}
	owner := l2OwnerOf(st, nodes, ip, ads, svcs)
	if owner == "" {
		d.unowned = ReasonNoEligibleNode
		return d
	}
	d.owner = L2Owner{IP: ip, Node: owner, Interfaces: interfacesFor(ads, nodes, owner), Services: keys(svcs)}
	return d
}

// l2OwnerOf picks the owner of ip among the nodes that may announce it:
// by rendezvous hashing for an address alone in its family, by Spread
// when its Services hold several addresses of its family.
func l2OwnerOf(st State, nodes []node, ip netip.Addr, ads []*config.L2Advertisement, svcs []*Service) string {
	if !hasSiblings(ip, svcs) {
		return Owner(ip, l2Usable(st, nodes, ip, ads, svcs))
	}
	group := siblings(ip, svcs)
	sibs := make([]Sibling, len(group))
	mine := 0
	conf, usable := l2Configured(nodes, ads), l2Usable(st, nodes, ip, ads, svcs)
	for i, a := range group {
		if a == ip {
			mine = i
		}
		sibs[i] = Sibling{IP: a, Configured: conf, Usable: usable}
		// a sibling of another pool (requested addresses) may have
		// other advertisements and another localFallback
		if sibAds := st.l2AdsFor(a, svcs); a != ip && (!slices.Equal(sibAds, ads) || st.fallbackOf(a, svcs) != st.fallbackOf(ip, svcs)) {
			sibs[i].Configured, sibs[i].Usable = l2Configured(nodes, sibAds), l2Usable(st, nodes, a, sibAds, svcs)
		}
	}
	return Spread(sibs)[mine]
}

// l2Usable: the nodes that may announce ip now (l2Candidates, narrowed
// by SharedLocalNodes).
func l2Usable(st State, nodes []node, ip netip.Addr, ads []*config.L2Advertisement, svcs []*Service) []string {
	cands, _ := SharedLocalNodes(l2Candidates(st, nodes, ads), svcs, st.fallbackOf(ip, svcs))
	return cands
}

// l2AdsFor returns the L2Advertisements covering the address for at least
// one of the Services holding it.
func (st State) l2AdsFor(ip netip.Addr, svcs []*Service) []*config.L2Advertisement {
	var out []*config.L2Advertisement
	for _, ad := range st.Config.L2Advertisements {
		for _, s := range svcs {
			if p := st.poolOf(s, ip); p != nil && ad.SelectsPool(p.Name) && ad.SelectsService(s.Labels) {
				out = append(out, ad)
				break
			}
		}
	}
	return out
}

// l2Candidates: eligible, live nodes some advertisement selects.
func l2Candidates(st State, nodes []node, ads []*config.L2Advertisement) []string {
	return selected(nodes, ads, func(n node) bool { return n.eligible && st.live(n.name) })
}

// l2Configured: eligible nodes some advertisement selects, live or not.
func l2Configured(nodes []node, ads []*config.L2Advertisement) []string {
	return selected(nodes, ads, func(n node) bool { return n.eligible })
}

// selected: the nodes passing keep that some advertisement selects.
func selected(nodes []node, ads []*config.L2Advertisement, keep func(node) bool) []string {
	var out []string
	for _, n := range nodes {
		if !keep(n) {
			continue
		}
		for _, ad := range ads {
			if ad.SelectsNode(n.labels) {
				out = append(out, n.name)
				break
			}
		}
	}
	return out
}

// interfacesFor merges the interface overrides of the advertisements that
// select the owner; any advertisement without an override means the
// default choice.
func interfacesFor(ads []*config.L2Advertisement, nodes []node, owner string) []string {
	var ownerNode node
	for _, n := range nodes {
		if n.name == owner {
			ownerNode = n
		}
	}
	set := map[string]bool{}
	for _, ad := range ads {
		if !ad.SelectsNode(ownerNode.labels) {
			continue
		}
		if len(ad.Interfaces) == 0 {
			return nil
		}
		for _, i := range ad.Interfaces {
			set[i] = true
		}
	}
	out := make([]string, 0, len(set))
	for i := range set {
		out = append(out, i)
	}
	sort.Strings(out)
	return out
}

func keys(svcs []*Service) []string {
	out := make([]string, len(svcs))
	for i, s := range svcs {
		out[i] = s.Key
	}
	return slices.Compact(out)
}
