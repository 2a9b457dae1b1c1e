package announce

import (
	"net/netip"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/herald-lb/herald/internal/config"
)

// Service is what announcing needs to know about one Service.
type Service struct {
	Key    string // namespace/name
	Labels labels.Set
	// IPs are the addresses in its status.
	IPs []netip.Addr
	// Pool is the pool the annotation herald.dev/ip-allocated-from-pool
	// names. Tenants can write it, so it decides nothing for an address
	// some pool contains or records as held outside its ranges; see
	// poolOf for the one case where it counts.
	Pool      string
	ETPLocal  bool
	Endpoints Endpoints
	// SharingKey is the herald.dev/allow-shared-ip annotation: Services
	// with externalTrafficPolicy: Local holding one address with it are
	// announced together (see SharedLocalNodes).
	SharingKey string
	// Rev is the revision of this conversion: a cache of conversions
	// gives a Service a new Rev whenever any other field may have
	// changed, so that an L2Memo can tell an address's holders did not
	// change. 0 means unknown: such a Service is always decided anew.
	Rev uint64
}

// State is everything a decision depends on.
type State struct {
	Config   *config.Config
	Nodes    []*corev1.Node
	Services []Service
	// Live reports whether a node's speaker is alive (from the member
	// list). Nil means every node is. It only matters for L2: a BGP
	// session ends by itself when its speaker dies.
	Live func(node string) bool
	// Eligibility are the operator's options of which nodes may announce.
	Eligibility Eligibility
}

// node is a Node with its eligibility worked out once.
type node struct {
	name     string
	labels   labels.Set
	eligible bool
	reason   string
}

func (st State) nodes() []node {
	out := make([]node, 0, len(st.Nodes))
	for _, n := range st.Nodes {
		out = append(out, st.nodeOf(n))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func (st State) nodeOf(n *corev1.Node) node {
	ok, why := NodeEligibleWith(n, st.Eligibility)
	return node{name: n.Name, labels: labels.Set(n.Labels), eligible: ok, reason: why}
}

// node returns the named node with its eligibility, nil when there is no
// such Node.
func (st State) node(name string) *node {
	for _, n := range st.Nodes {
		if n.Name == name {
			me := st.nodeOf(n)
			return &me
		}
	}
	return nil
}

func (st State) live(name string) bool { return st.Live == nil || st.Live(name) }

// poolOf returns the pool an address of the Service belongs to, from the
// configuration alone: the pool whose ranges contain it, else the pool
// whose status records it as held outside its ranges (the controller's
// record, written where it counts outsideRanges). The Service's
// annotation, which its owner can edit, decides nothing, with one
// exception: an address found in neither falls back to the pool the
// annotation names only while that pool's status has no current record
// at all (never written for its generation, or by a version without the
// record, as right after an upgrade or a pool edit the controller has not
// described yet), so that the speakers do not withdraw what a pool that
// shrank still holds before the controller records it. Otherwise such an
// address is one the controller does not hold (the allocator restores it
// to no pool) or has not recorded yet: no pool's advertisements apply to
// it. Each address of a dual-stack Service is looked up by itself.
func (st State) poolOf(svc *Service, ip netip.Addr) *config.Pool {
	p, _ := st.Config.PoolOfRecord(ip, svc.Pool)
	return p
}

// AnnotationFallbacks lists, sorted, the addresses ("ns/name ip pool")
// whose pool only the Service's annotation names (see poolOf): an
// address no pool contains or records, while the pool named has no
// record at all. Cheap when every pool has a record (the steady state).
func AnnotationFallbacks(st State) []string {
	unrecorded := false
	for _, p := range st.Config.Pools {
		unrecorded = unrecorded || p.OutsideUnrecorded
	}
	if !unrecorded {
		return nil
	}
	var out []string
	for i := range st.Services {
		s := &st.Services[i]
		for _, ip := range s.IPs {
			if p, fallback := st.Config.PoolOfRecord(ip, s.Pool); fallback {
				out = append(out, s.Key+" "+ip.String()+" "+p.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// holding is one address and the Services holding it, sorted by key.
type holding struct {
	ip   netip.Addr
	svcs []*Service
}

// holders groups the Services by address, addresses sorted. It sorts
// (address, Service) pairs rather than filling a map: at 10,000 Services
// a reconcile spends far less in it.
func (st State) holders() []holding { return st.holdersWith(&holderScratch{}) }

// holderScratch is memory holdersWith reuses between calls: the result
// of one call is valid until the next with the same scratch.
type holderScratch struct {
	pairs []holderPair
	svcs  []*Service
	out   []holding
}

type holderPair struct {
	ip  netip.Addr
	svc *Service
}

// holdersWith is holders in sc's memory.
func (st State) holdersWith(sc *holderScratch) []holding {
	n := 0
	for i := range st.Services {
		n += len(st.Services[i].IPs)
	}
	pairs := slices.Grow(sc.pairs[:0], n)
	for i := range st.Services {
		s := &st.Services[i]
		for _, ip := range s.IPs {
			pairs = append(pairs, holderPair{ip, s})
		}
	}
	slices.SortFunc(pairs, func(a, b holderPair) int {
		if c := a.ip.Compare(b.ip); c != 0 {
			return c
		}
		return strings.Compare(a.svc.Key, b.svc.Key)
	})
	svcs := slices.Grow(sc.svcs[:0], len(pairs))[:len(pairs)]
	out := sc.out[:0]
	for i, p := range pairs {
		svcs[i] = p.svc
		if len(out) > 0 && out[len(out)-1].ip == p.ip {
			last := &out[len(out)-1]
			last.svcs = svcs[i-len(last.svcs) : i+1 : i+1]
			continue
		}
		out = append(out, holding{ip: p.ip, svcs: svcs[i : i+1 : i+1]})
	}
	clear(pairs) // drop the Service pointers until the next call
	sc.pairs, sc.svcs, sc.out = pairs[:0], svcs, out
	return out
}
