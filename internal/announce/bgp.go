package announce

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"

	"github.com/herald-lb/herald/internal/config"
)

// Route is one prefix a node advertises to some of its peers, with the
// attributes merged from every BGPAdvertisement that covers it for them.
type Route struct {
	Prefix           netip.Prefix
	Peers            []string // BGPPeer names, sorted
	Communities      []uint32
	LargeCommunities [][3]uint32
	LocalPref        *uint32
	// Services whose addresses the prefix carries, sorted.
	Services []string
}

// BGPResult is what one node does in BGP mode.
type BGPResult struct {
	// Peers are the sessions the node opens, sorted by name.
	Peers []*config.Peer
	// Routes are sorted by prefix, then by first peer.
	Routes []Route
}

// routeKey identifies the attributes one peer gets for one prefix.
type routeKey struct {
	prefix netip.Prefix
	peer   string
}

type attrs struct {
	communities map[uint32]bool
	large       map[[3]uint32]bool
	localPref   *uint32
	services    map[string]bool
}

// BGP decides the sessions and routes of one node.
func BGP(st State, nodeName string) BGPResult {
	var me *node
	for _, n := range st.nodes() {
		if n.name == nodeName {
			me = &n
			break
		}
	}
	if me == nil {
		return BGPResult{}
	}
	var res BGPResult
	for _, p := range st.Config.Peers {
		if p.SelectsNode(me.labels) {
			res.Peers = append(res.Peers, p)
		}
	}
	if !me.eligible || len(res.Peers) == 0 {
		return res
	}
	merged := map[routeKey]*attrs{}
	for i := range st.Services {
		s := &st.Services[i]
		if !advertisesFrom(s, me.name) {
			continue
		}
		for _, ip := range s.IPs {
			st.addRoutes(merged, s, ip, *me, res.Peers)
		}
	}
	res.Routes = group(merged)
	return res
}

// advertisesFrom: a Cluster-policy Service needs a usable endpoint
// somewhere; a Local-policy one needs one on this node.
func advertisesFrom(s *Service, node string) bool {
	if s.ETPLocal {
		return s.Endpoints.Local[node]
	}
	return s.Endpoints.AnyReady
}

func (st State) addRoutes(merged map[routeKey]*attrs, s *Service, ip netip.Addr, me node, peers []*config.Peer) {
	pool := st.poolOf(s, ip)
	if pool == nil {
		return
	}
	for _, ad := range st.Config.BGPAdvertisements {
		if !ad.SelectsPool(pool.Name) || !ad.SelectsService(s.Labels) || !ad.SelectsNode(me.labels) {
			continue
		}
		bits := ad.AggregationLength
		if ip.Is6() {
			bits = ad.AggregationLengthV6
		}
		prefix, err := ip.Prefix(bits)
		if err != nil {
			continue
		}
		for _, p := range peers {
			if !ad.SelectsPeer(p.Name) {
				continue
			}
			k := routeKey{prefix, p.Name}
			a := merged[k]
			if a == nil {
				a = &attrs{communities: map[uint32]bool{}, large: map[[3]uint32]bool{}, services: map[string]bool{}}
				merged[k] = a
			}
			a.add(ad, s.Key)
		}
	}
}

func (a *attrs) add(ad *config.BGPAdvertisement, svc string) {
	for _, c := range ad.Communities {
		a.communities[c] = true
	}
	for _, c := range ad.LargeCommunities {
		a.large[c] = true
	}
	if ad.LocalPref != nil && (a.localPref == nil || *ad.LocalPref > *a.localPref) {
		lp := *ad.LocalPref
		a.localPref = &lp
	}
	a.services[svc] = true
}

// group turns per-(prefix, peer) attributes into routes, one per prefix and
// distinct attribute set.
func group(merged map[routeKey]*attrs) []Route {
	byID := map[string]*Route{}
	for k, a := range merged {
		r := Route{Prefix: k.prefix, LocalPref: a.localPref}
		for c := range a.communities {
			r.Communities = append(r.Communities, c)
		}
		slices.Sort(r.Communities)
		for c := range a.large {
			r.LargeCommunities = append(r.LargeCommunities, c)
		}
		sort.Slice(r.LargeCommunities, func(i, j int) bool { return lessLarge(r.LargeCommunities[i], r.LargeCommunities[j]) })
		lp := "-"
		if r.LocalPref != nil {
			lp = fmt.Sprint(*r.LocalPref)
		}
		id := fmt.Sprint(k.prefix, r.Communities, r.LargeCommunities, lp)
		if prev := byID[id]; prev != nil {
			prev.Peers = append(prev.Peers, k.peer)
			prev.Services = mergeSorted(prev.Services, a.services)
			continue
		}
		r.Peers = []string{k.peer}
		r.Services = mergeSorted(nil, a.services)
		byID[id] = &r
	}
	out := make([]Route, 0, len(byID))
	for _, r := range byID {
		slices.Sort(r.Peers)
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if c := out[i].Prefix.Addr().Compare(out[j].Prefix.Addr()); c != 0 {
			return c < 0
		}
		if out[i].Prefix.Bits() != out[j].Prefix.Bits() {
			return out[i].Prefix.Bits() < out[j].Prefix.Bits()
		}
		return out[i].Peers[0] < out[j].Peers[0]
	})
	return out
}

func mergeSorted(have []string, add map[string]bool) []string {
	for s := range add {
		if !slices.Contains(have, s) {
			have = append(have, s)
		}
	}
	slices.Sort(have)
	return have
}

func lessLarge(a, b [3]uint32) bool {
	for k := 0; k < 3; k++ {
		if a[k] != b[k] {
			return a[k] < b[k]
		}
	}
	return false
}
