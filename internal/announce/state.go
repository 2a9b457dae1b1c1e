package announce

import (
	"net/netip"
	"sort"

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
	// Pool is the pool its addresses came from (the controller's
	// annotation); "" looks the pool up by address.
	Pool      string
	ETPLocal  bool
	Endpoints Endpoints
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
		ok, why := NodeEligibleWith(n, st.Eligibility)
		out = append(out, node{name: n.Name, labels: labels.Set(n.Labels), eligible: ok, reason: why})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func (st State) live(name string) bool { return st.Live == nil || st.Live(name) }

// poolOf returns the pool an address of the Service belongs to.
func (st State) poolOf(svc *Service, ip netip.Addr) *config.Pool {
	if p, ok := st.Config.Pools[svc.Pool]; ok {
		return p
	}
	p, _ := st.Config.PoolFor(ip)
	return p
}

// holders groups the Services by address, addresses sorted.
func (st State) holders() ([]netip.Addr, map[netip.Addr][]*Service) {
	byIP := map[netip.Addr][]*Service{}
	for i := range st.Services {
		s := &st.Services[i]
		for _, ip := range s.IPs {
			byIP[ip] = append(byIP[ip], s)
		}
	}
	ips := make([]netip.Addr, 0, len(byIP))
	for ip, svcs := range byIP {
		ips = append(ips, ip)
		sort.Slice(svcs, func(i, j int) bool { return svcs[i].Key < svcs[j].Key })
	}
	sort.Slice(ips, func(i, j int) bool { return ips[i].Less(ips[j]) })
	return ips, byIP
}
