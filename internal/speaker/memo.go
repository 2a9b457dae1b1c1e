package speaker

import (
	"maps"
	"reflect"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/config"
)

// decisionMemo makes a reconcile cost what changed, not how many Services
// there are: informer caches replace an object when it changes and never
// modify it, so a Service (or EndpointSlice, Node, config object) whose
// pointer is the one seen last time is unchanged. It keeps each Service's
// announce.Service, converted once per change, and remembers whether
// anything a decision depends on changed since the last decision, so that
// an unchanged state (a Node heartbeat, a status write announce ignores)
// reuses the last L2 and BGP decisions instead of recomputing them.
//
// It is used under Speaker.mu.
type decisionMemo struct {
	gen     uint64
	svcs    map[string]*memoService
	list    []announce.Service // sorted by key, shared with the State: read only
	cfg     config.Input
	nodes   []nodeView
	live    []bool
	changed bool // something changed since the last take

	l2    announce.L2Result
	hasL2 bool
	// planned and settled: an L2 plan was made, with the member list
	// settled or not.
	planned, settled bool
}

type memoService struct {
	gen    uint64
	svc    *corev1.Service
	slices []*discoveryv1.EndpointSlice
	out    announce.Service
}

// nodeView is what announce reads of a Node.
type nodeView struct {
	name      string
	labels    map[string]string
	eligible  bool
	reason    string
	addresses []corev1.NodeAddress
}

func newDecisionMemo() *decisionMemo { return &decisionMemo{svcs: map[string]*memoService{}} }

// services is announce.ServicesFrom, converting only the Services and
// EndpointSlices that changed since the last call.
func (m *decisionMemo) services(svcs []*corev1.Service, ours func(*corev1.Service) bool,
	slicesOf func(*corev1.Service) []*discoveryv1.EndpointSlice) []announce.Service {
	m.gen++
	listChanged := false
	for _, svc := range svcs {
		if !ours(svc) {
			continue
		}
		key := svc.Namespace + "/" + svc.Name
		sl := slicesOf(svc)
		e := m.svcs[key]
		if e == nil {
			e = &memoService{}
			m.svcs[key] = e
			listChanged = true
		}
		e.gen = m.gen
		if e.svc == svc && slices.Equal(e.slices, sl) {
			continue
		}
		out := announce.ServicesFrom([]*corev1.Service{svc}, func(*corev1.Service) bool { return true },
			func(*corev1.Service) []*discoveryv1.EndpointSlice { return sl })[0]
		e.svc, e.slices = svc, sl
		if !reflect.DeepEqual(e.out, out) {
			e.out, listChanged = out, true
		}
	}
	for key, e := range m.svcs {
		if e.gen != m.gen {
			delete(m.svcs, key)
			listChanged = true
		}
	}
	if listChanged || m.list == nil {
		m.list = make([]announce.Service, 0, len(m.svcs))
		for _, e := range m.svcs {
			m.list = append(m.list, e.out)
		}
		sort.Slice(m.list, func(i, j int) bool { return m.list[i].Key < m.list[j].Key })
		m.changed = true
	}
	return m.list
}

// observe notes the configuration objects and Nodes a decision reads.
func (m *decisionMemo) observe(in config.Input, nodes []*corev1.Node) {
	if !sameInput(m.cfg, in) {
		m.cfg, m.changed = in, true
	}
	views := make([]nodeView, len(nodes))
	for i, n := range nodes {
		ok, why := announce.NodeEligible(n)
		views[i] = nodeView{name: n.Name, labels: n.Labels, eligible: ok, reason: why, addresses: n.Status.Addresses}
	}
	sort.Slice(views, func(i, j int) bool { return views[i].name < views[j].name })
	if !slices.EqualFunc(m.nodes, views, sameNodeView) {
		m.nodes, m.changed = views, true
	}
}

// take reports whether anything changed since the last take (the live
// states of the nodes included) and starts a new round.
func (m *decisionMemo) take(live func(string) bool) bool {
	states := make([]bool, len(m.nodes))
	for i, n := range m.nodes {
		states[i] = live(n.name)
	}
	if !slices.Equal(states, m.live) {
		m.live, m.changed = states, true
	}
	changed := m.changed
	m.changed = false
	return changed
}

// l2Result is announce.L2(st), recomputed only when something changed.
func (m *decisionMemo) l2Result(st announce.State, changed bool) announce.L2Result {
	if changed || !m.hasL2 {
		m.l2, m.hasL2 = announce.L2(st), true
	}
	return m.l2
}

func sameNodeView(a, b nodeView) bool {
	return a.name == b.name && a.eligible == b.eligible && a.reason == b.reason &&
		maps.Equal(a.labels, b.labels) && slices.Equal(a.addresses, b.addresses)
}

// sameInput: the same objects (listers return them in any order).
func sameInput(a, b config.Input) bool {
	return sameSet(a.Pools, b.Pools) && sameSet(a.L2Advertisements, b.L2Advertisements) &&
		sameSet(a.BGPAdvertisements, b.BGPAdvertisements) && sameSet(a.Peers, b.Peers) &&
		sameSet(a.Communities, b.Communities) && sameSet(a.BFDProfiles, b.BFDProfiles) &&
		sameSet(a.Secrets, b.Secrets)
}

func sameSet[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	in := make(map[T]bool, len(a))
	for _, x := range a {
		in[x] = true
	}
	for _, x := range b {
		if !in[x] {
			return false
		}
	}
	return true
}
