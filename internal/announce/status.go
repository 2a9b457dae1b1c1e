package announce

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// ServiceStatus says whether and how a Service's addresses are announced,
// for the herald.dev/Announced condition.
type ServiceStatus struct {
	Announced bool
	// Reason: Announced, NoAddress, NoAdvertisementMatches,
	// NoEligibleNode, NoReadyEndpoint, SharedLocalIncomplete.
	Reason  string
	Message string
	// Gap names, for a Service sharing an address with other Services
	// with externalTrafficPolicy: Local, which of them lack local
	// endpoints where, while no node serves them all (see
	// SharedLocalNodes); empty otherwise.
	Gap string
	// L2 maps each address announced in L2 mode to its node.
	L2 map[netip.Addr]string
	// BGPNodes are the nodes advertising some address of the Service.
	BGPNodes []string
}

// Statuses computes the status of every Service in the state, keyed by
// Service key. With Live unset, every eligible node counts as live.
func Statuses(st State) map[string]ServiceStatus {
	l2 := L2(st)
	owners := map[netip.Addr]string{}
	for _, o := range l2.Owners {
		owners[o.IP] = o.Node
	}
	bgpNodes := map[string][]string{}
	bgpCovered := map[string]bool{}
	for _, n := range st.nodes() {
		for _, r := range BGP(st, n.name).Routes {
			for _, s := range r.Services {
				if !slices.Contains(bgpNodes[s], n.name) {
					bgpNodes[s] = append(bgpNodes[s], n.name)
				}
			}
		}
	}
	for i := range st.Services {
		s := &st.Services[i]
		for _, ip := range s.IPs {
			if st.bgpCovers(s, ip) {
				bgpCovered[s.Key] = true
			}
		}
	}
	out := map[string]ServiceStatus{}
	byIP := sharedLocal(st.Services)
	for i := range st.Services {
		s := &st.Services[i]
		out[s.Key] = statusOf(s, owners, l2, bgpNodes[s.Key], bgpCovered[s.Key], st.sharedGap(s, byIP))
	}
	return out
}

// StatusOf computes the status of one Service (by key) without deciding
// for every other Service: only the holders of its addresses and its own
// BGP advertisements are looked at.
func StatusOf(st State, key string) ServiceStatus {
	var target *Service
	for i := range st.Services {
		if st.Services[i].Key == key {
			target = &st.Services[i]
		}
	}
	if target == nil {
		return ServiceStatus{Reason: ReasonNoAddress, Message: "the Service has no address yet"}
	}
	mine := map[netip.Addr]bool{}
	for _, ip := range target.IPs {
		mine[ip] = true
	}
	var sharers []Service
	for _, s := range st.Services {
		for _, ip := range s.IPs {
			if mine[ip] {
				sharers = append(sharers, s)
				break
			}
		}
	}
	sub := st
	sub.Services = sharers
	l2 := L2(sub)
	owners := map[netip.Addr]string{}
	for _, o := range l2.Owners {
		owners[o.IP] = o.Node
	}
	covered := false
	for _, ip := range target.IPs {
		covered = covered || st.bgpCovers(target, ip)
	}
	return statusOf(target, owners, l2, bgpNodesOf(st, target), covered, st.sharedGap(target, sharedLocal(sharers)))
}

// bgpNodesOf returns the nodes that advertise some address of the Service.
func bgpNodesOf(st State, target *Service) []string {
	sub := st
	sub.Services = []Service{*target}
	if (&sharedBGP{byIP: sharedLocal(st.Services)}).holds(target) {
		sub.Services = st.Services // its routes depend on its sharers
		var out []string
		for _, n := range st.nodes() {
			for _, r := range BGP(sub, n.name).Routes {
				if slices.Contains(r.Services, target.Key) {
					out = append(out, n.name)
					break
				}
			}
		}
		return out
	}
	var out []string
	for _, n := range st.nodes() {
		if len(BGP(sub, n.name).Routes) > 0 {
			out = append(out, n.name)
		}
	}
	return out
}

func statusOf(s *Service, owners map[netip.Addr]string, l2 L2Result, bgpNodes []string, bgpCovered bool, gap sharedGap) ServiceStatus {
	if len(s.IPs) == 0 {
		return ServiceStatus{Reason: ReasonNoAddress, Message: "the Service has no address yet"}
	}
	st := ServiceStatus{L2: map[netip.Addr]string{}, BGPNodes: bgpNodes, Gap: gap.words}
	l2Covered := false
	var parts []string
	for _, ip := range s.IPs {
		if n, ok := owners[ip]; ok {
			st.L2[ip] = n
			l2Covered = true
			parts = append(parts, fmt.Sprintf("%s answered by node %s (L2)", ip, n))
		} else if _, ok := l2.Unowned[ip]; ok {
			l2Covered = true
		}
	}
	if len(bgpNodes) > 0 {
		slices.Sort(bgpNodes)
		parts = append(parts, fmt.Sprintf("advertised over BGP by %s", strings.Join(bgpNodes, ", ")))
	}
	switch {
	case gap.words != "" && (l2Covered || bgpCovered):
		st.Announced, st.Reason = len(parts) > 0, ReasonSharedLocalIncomplete
		st.Message = strings.Join(append(parts, gap.words), "; ")
	case len(parts) > 0:
		st.Announced, st.Reason, st.Message = true, ReasonAnnounced, strings.Join(parts, "; ")
	case !l2Covered && !bgpCovered:
		st.Reason = ReasonNoAdvertisement
		st.Message = "no L2Advertisement selects this Service's pool and labels, and no BGPAdvertisement does with a valid BGPPeer to send it to; create one, or check ipAddressPools, serviceSelectors and the BGPPeers' status"
	case !s.Endpoints.AnyReady && (bgpCovered || s.ETPLocal):
		st.Reason = ReasonNoReadyEndpoint
		st.Message = "the Service has no ready endpoint: BGP advertises a Service, and externalTrafficPolicy: Local announces it, only from nodes that can deliver its traffic; it is announced as soon as a pod is ready"
	default:
		st.Reason = ReasonNoEligibleNode
		st.Message = "no node may announce the Service: every candidate node is excluded (label node.kubernetes.io/exclude-from-external-load-balancers, drain label herald.dev/drain, taint ToBeDeletedByClusterAutoscaler), being deleted, without a live speaker, not selected by the advertisements' nodeSelectors, or (externalTrafficPolicy: Local) has no ready local endpoint"
	}
	return st
}

// bgpCovers: some BGPAdvertisement selects the address's pool and the
// Service, whatever the nodes.
func (st State) bgpCovers(s *Service, ip netip.Addr) bool {
	pool := st.poolOf(s, ip)
	if pool == nil {
		return false
	}
	for _, ad := range st.Config.BGPAdvertisements {
		if ad.SelectsPool(pool.Name) && ad.SelectsService(s.Labels) && len(st.Config.Peers) > 0 {
			return true
		}
	}
	return false
}
