package announce

import (
	"cmp"
	"encoding/binary"
	"net/netip"
	"slices"
	"strings"

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
	// Weight is the node's ready local endpoints of the prefix's
	// externalTrafficPolicy: Local Services that an advertisement with
	// link bandwidth covers (summed over those Services); 0: the route
	// carries no link-bandwidth community.
	Weight uint32
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

// attrs are what the advertisements covering one prefix for one peer
// give it, duplicates included (group removes them): slices, not sets, so
// that 10,000 prefixes do not cost 30,000 maps.
type attrs struct {
	communities []uint32
	large       [][3]uint32
	localPref   *uint32
	services    []string
	weights     []svcWeight // of the weighted Services, duplicates included
}

// svcWeight is one Service's weight in a route.
type svcWeight struct {
	svc    string
	weight uint32
}

// BGP decides the sessions and routes of one node.
func BGP(st State, nodeName string) BGPResult {
	me := st.node(nodeName)
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
	merged := mergedAttrs{}
	sb := newSharedBGP(st, me.name)
	for i := range st.Services {
		s := &st.Services[i]
		if !advertisesFrom(s, me.name) {
			continue
		}
		st.eachContribution(s, *me, res.Peers, sb, func(k routeKey, ad *config.BGPAdvertisement) {
			merged.add(k, ad, s.Key, weightOf(s, ad, me.name))
		})
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

// weightOf is what a Service weighs in the routes an advertisement gives
// it on a node: its ready endpoints there when the advertisement asks for
// link bandwidth and the Service is Local-policy (a Cluster-policy
// Service spreads over every node anyway), else 0.
func weightOf(s *Service, ad *config.BGPAdvertisement, node string) uint32 {
	if !ad.LinkBandwidth || !s.ETPLocal {
		return 0
	}
	return uint32(max(0, s.Endpoints.LocalReady[node]))
}

// eachContribution calls add for every advertisement that covers one of
// the Service's addresses for one of the node's peers, with the prefix
// (the address, or its aggregate) and the peer; an address shared with
// other Local Services only where sb keeps it.
func (st State) eachContribution(s *Service, me node, peers []*config.Peer, sb *sharedBGP, add func(routeKey, *config.BGPAdvertisement)) {
	for _, ip := range s.IPs {
		if !sb.keep(s, ip) {
			continue
		}
		pool := st.poolOf(s, ip)
		if pool == nil {
			continue
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
				if ad.SelectsPeer(p.Name) {
					add(routeKey{prefix, p.Name}, ad)
				}
			}
		}
	}
}

// mergedAttrs are the attributes of each (prefix, peer) being merged.
type mergedAttrs map[routeKey]*attrs

func (m mergedAttrs) add(k routeKey, ad *config.BGPAdvertisement, svc string, weight uint32) {
	a := m[k]
	if a == nil {
		a = &attrs{}
		m[k] = a
	}
	a.add(ad, svc)
	if weight > 0 {
		a.weights = append(a.weights, svcWeight{svc, weight})
	}
}

// weight sums the weights of the distinct weighted Services.
func (a *attrs) weight() uint32 {
	if len(a.weights) == 0 {
		return 0
	}
	ws := slices.Clone(a.weights)
	slices.SortFunc(ws, func(x, y svcWeight) int { return strings.Compare(x.svc, y.svc) })
	ws = slices.CompactFunc(ws, func(x, y svcWeight) bool { return x.svc == y.svc })
	var sum uint32
	for _, w := range ws {
		sum += w.weight
	}
	return sum
}

func (a *attrs) add(ad *config.BGPAdvertisement, svc string) {
	a.communities = append(a.communities, ad.Communities...)
	a.large = append(a.large, ad.LargeCommunities...)
	if ad.LocalPref != nil && (a.localPref == nil || *ad.LocalPref > *a.localPref) {
		lp := *ad.LocalPref
		a.localPref = &lp
	}
	a.services = append(a.services, svc)
}

// routeID tells routes apart: one prefix with one set of attributes.
type routeID struct {
	prefix       netip.Prefix
	communities  string // the sorted communities, 4 bytes each
	large        string // the sorted large communities, 12 bytes each
	localPref    uint32
	hasLocalPref bool
	weight       uint32
}

// group turns per-(prefix, peer) attributes into routes, one per prefix and
// distinct attribute set.
func group(merged mergedAttrs) []Route {
	byID := make(map[routeID]*Route, len(merged))
	for k, a := range merged {
		r := Route{Prefix: k.prefix, LocalPref: a.localPref, Weight: a.weight()}
		if len(a.communities) > 0 {
			r.Communities = slices.Clone(a.communities)
			slices.Sort(r.Communities)
			r.Communities = slices.Compact(r.Communities)
		}
		if len(a.large) > 0 {
			r.LargeCommunities = slices.Clone(a.large)
			slices.SortFunc(r.LargeCommunities, compareLarge)
			r.LargeCommunities = slices.Compact(r.LargeCommunities)
		}
		id := routeID{prefix: k.prefix, communities: communitiesKey(r.Communities), large: largeKey(r.LargeCommunities), weight: r.Weight}
		if r.LocalPref != nil {
			id.localPref, id.hasLocalPref = *r.LocalPref, true
		}
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
	slices.SortFunc(out, func(a, b Route) int {
		if c := a.Prefix.Addr().Compare(b.Prefix.Addr()); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Prefix.Bits(), b.Prefix.Bits()); c != 0 {
			return c
		}
		return strings.Compare(a.Peers[0], b.Peers[0])
	})
	return out
}

func communitiesKey(cs []uint32) string {
	if len(cs) == 0 {
		return ""
	}
	b := make([]byte, 0, 4*len(cs))
	for _, c := range cs {
		b = binary.BigEndian.AppendUint32(b, c)
	}
	return string(b)
}

func largeKey(ls [][3]uint32) string {
	if len(ls) == 0 {
		return ""
	}
	b := make([]byte, 0, 12*len(ls))
	for _, l := range ls {
		for _, v := range l {
			b = binary.BigEndian.AppendUint32(b, v)
		}
	}
	return string(b)
}

// mergeSorted adds names to the sorted set have and returns it sorted,
// without duplicates.
func mergeSorted(have, add []string) []string {
	out := append(slices.Clone(have), add...)
	slices.Sort(out)
	return slices.Compact(out)
}

func compareLarge(a, b [3]uint32) int {
	for k := range 3 {
		if c := cmp.Compare(a[k], b[k]); c != 0 {
			return c
		}
	}
	return 0
}
