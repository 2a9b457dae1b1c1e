package announce

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/herald-lb/herald/api/v1beta1"
)

// ReasonSharedLocalIncomplete: Services with externalTrafficPolicy: Local
// share an address and no node has a ready local endpoint of every one.
const ReasonSharedLocalIncomplete = "SharedLocalIncomplete"

// SharedLocalNodes decides which of the candidate nodes may announce an
// address held by svcs: every candidate when none of them has
// externalTrafficPolicy: Local; else the candidates with a ready local
// endpoint of every such Service (complete is then true) if there are
// any; else, by the pool's fallback, the candidates with a local endpoint
// of some of them (SomePorts, also for an unknown value) or none (None).
// A single Local Service is complete wherever it has a local endpoint.
// The result keeps the candidates' order.
func SharedLocalNodes(cands []string, svcs []*Service, fallback string) (nodes []string, complete bool) {
	local := localOnly(svcs)
	if len(local) == 0 {
		return cands, true
	}
	var all, some []string
	for _, n := range cands {
		count := localCount(local, n)
		if count == len(local) {
			all = append(all, n)
		}
		if count > 0 {
			some = append(some, n)
		}
	}
	switch {
	case len(all) > 0:
		return all, true
	case fallback == v1beta1.LocalFallbackNone:
		return nil, false
	}
	return some, false
}

// LocalGap is one Service sharing an address that lacks a ready local
// endpoint on nodes where another Service sharing it has one.
type LocalGap struct {
	Service string
	Nodes   []string // sorted
}

// LocalGaps lists, by Service key, the gaps among the candidate nodes
// that serve some Local Service of svcs: for each Local Service, those
// of them where it has no ready local endpoint (all of them when it has
// none anywhere). Empty when some candidate serves every one.
func LocalGaps(cands []string, svcs []*Service) []LocalGap {
	local := localOnly(svcs)
	var serving []string
	for _, n := range cands {
		switch localCount(local, n) {
		case len(local):
			return nil
		case 0:
		default:
			serving = append(serving, n)
		}
	}
	slices.Sort(serving)
	var out []LocalGap
	for _, s := range local {
		var miss []string
		for _, n := range serving {
			if !s.Endpoints.Local[n] {
				miss = append(miss, n)
			}
		}
		if len(miss) > 0 || len(serving) == 0 {
			out = append(out, LocalGap{Service: s.Key, Nodes: miss})
		}
	}
	return out
}

// GapWords describes gaps for the owner of the Service key: a Service
// of another namespace by nothing but that (sharing across namespaces
// needs the pool's consent, and a tenant must not learn another's
// Service names), at most five nodes each.
func GapWords(ip netip.Addr, gaps []LocalGap, key string) string {
	ns, _, _ := strings.Cut(key, "/")
	parts := make([]string, 0, len(gaps))
	for _, g := range gaps {
		who := "a Service in another namespace"
		if gns, _, _ := strings.Cut(g.Service, "/"); gns == ns {
			who = "Service " + g.Service
		}
		if len(g.Nodes) == 0 {
			parts = append(parts, who+" has no ready local endpoint on any candidate node")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s has no ready local endpoint on %s", who, nodeList(g.Nodes, 5)))
	}
	return fmt.Sprintf("no node has a ready local endpoint of every Service sharing %s (externalTrafficPolicy: Local): %s", ip, strings.Join(parts, "; "))
}

func nodeList(nodes []string, most int) string {
	if len(nodes) <= most {
		return strings.Join(nodes, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(nodes[:most], ", "), len(nodes)-most)
}

func localOnly(svcs []*Service) []*Service {
	var out []*Service
	for _, s := range svcs {
		if s.ETPLocal {
			out = append(out, s)
		}
	}
	return out
}

func localCount(local []*Service, node string) int {
	count := 0
	for _, s := range local {
		if s.Endpoints.Local[node] {
			count++
		}
	}
	return count
}

// sharedLocal maps every address held by more than one Service with
// externalTrafficPolicy: Local and a sharing key to its holders, sorted
// by key. Nil when there is none: the common case costs one pass.
func sharedLocal(svcs []Service) map[netip.Addr][]*Service {
	var byIP map[netip.Addr][]*Service
	for i := range svcs {
		s := &svcs[i]
		if !s.ETPLocal || s.SharingKey == "" {
			continue
		}
		for _, ip := range s.IPs {
			if byIP == nil {
				byIP = map[netip.Addr][]*Service{}
			}
			byIP[ip] = append(byIP[ip], s)
		}
	}
	for ip, h := range byIP {
		if len(h) < 2 {
			delete(byIP, ip)
			continue
		}
		slices.SortFunc(h, func(a, b *Service) int { return strings.Compare(a.Key, b.Key) })
	}
	if len(byIP) == 0 {
		return nil
	}
	return byIP
}

// fallbackOf is the LocalFallback of the pool of ip, held by svcs.
func (st State) fallbackOf(ip netip.Addr, svcs []*Service) string {
	for _, s := range svcs {
		if p := st.poolOf(s, ip); p != nil {
			return p.LocalFallback
		}
	}
	return v1beta1.LocalFallbackSomePorts
}

// bgpCandidates are the nodes that may advertise at all: eligible, and
// selected by some BGPPeer.
func (st State) bgpCandidates() []string {
	var out []string
	for _, n := range st.nodes() {
		if !n.eligible {
			continue
		}
		for _, p := range st.Config.Peers {
			if p.SelectsNode(n.labels) {
				out = append(out, n.name)
				break
			}
		}
	}
	return out
}

// sharedBGP decides, for a node, which shared Local addresses it
// advertises; computed once per decision and only when some address is
// shared.
type sharedBGP struct {
	st    State
	byIP  map[netip.Addr][]*Service
	cands []string
	memo  map[netip.Addr]bool
	me    string
}

func newSharedBGP(st State, me string) *sharedBGP {
	byIP := sharedLocal(st.Services)
	if byIP == nil {
		return nil
	}
	return &sharedBGP{st: st, byIP: byIP, cands: st.bgpCandidates(), memo: map[netip.Addr]bool{}, me: me}
}

// shared reports whether s holds ip with other Local Services.
func (sb *sharedBGP) shared(ip netip.Addr) bool {
	if sb == nil {
		return false
	}
	_, ok := sb.byIP[ip]
	return ok
}

// keep reports whether the node advertises ip on behalf of s: always
// for a Cluster-policy Service, one without a sharing key, or an address
// s holds alone; for a shared one, when the node is among
// SharedLocalNodes and s has a local endpoint on it.
func (sb *sharedBGP) keep(s *Service, ip netip.Addr) bool {
	if !s.ETPLocal || s.SharingKey == "" || !sb.shared(ip) {
		return true
	}
	ok, seen := sb.memo[ip]
	if !seen {
		h := sb.byIP[ip]
		nodes, _ := SharedLocalNodes(sb.cands, h, sb.st.fallbackOf(ip, h))
		ok = slices.Contains(nodes, sb.me)
		sb.memo[ip] = ok
	}
	return ok && s.Endpoints.Local[sb.me]
}

// holds reports whether s holds some address with other Local Services.
func (sb *sharedBGP) holds(s *Service) bool {
	for _, ip := range s.IPs {
		if h := sb.heldBy(ip); slices.ContainsFunc(h, func(o *Service) bool { return o.Key == s.Key }) {
			return true
		}
	}
	return false
}

func (sb *sharedBGP) heldBy(ip netip.Addr) []*Service {
	if sb == nil {
		return nil
	}
	return sb.byIP[ip]
}

// sharedGap describes the addresses a Service shares with other Local
// Services that no node serves in full, for its condition.
type sharedGap struct{ words string }

// sharedGap works out s's gaps among the eligible, live nodes; byIP is
// sharedLocal of the Services.
func (st State) sharedGap(s *Service, byIP map[netip.Addr][]*Service) sharedGap {
	if byIP == nil {
		return sharedGap{}
	}
	var cands []string
	for _, n := range st.nodes() {
		if n.eligible && st.live(n.name) {
			cands = append(cands, n.name)
		}
	}
	var parts []string
	for _, ip := range s.IPs {
		h := byIP[ip]
		gaps := LocalGaps(cands, h)
		if len(h) == 0 || len(gaps) == 0 {
			continue
		}
		w := GapWords(ip, gaps, s.Key)
		if st.fallbackOf(ip, h) == v1beta1.LocalFallbackNone {
			w += "; announced from no node until one serves every port (the pool's spec.sharing.localFallback: None)"
		} else {
			w += "; announced from the nodes with local endpoints of some of them, which drop the other ports (the pool's spec.sharing.localFallback: SomePorts)"
		}
		parts = append(parts, w)
	}
	return sharedGap{words: strings.Join(parts, "; ")}
}
