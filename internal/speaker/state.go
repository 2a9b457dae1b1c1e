package speaker

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/config"
	"github.com/herald-lb/herald/internal/service"
)

// state reads everything a decision depends on from the listers.
func (s *Speaker) state() (announce.State, []config.Problem, error) {
	return s.cluster.state(s.opts.Class, s.opts.Eligibility, s.liveness.live)
}

// state reads everything a decision depends on from the listers: the
// Services of class, the configuration in force, the nodes; live says
// which nodes' speakers are alive.
func (c *cluster) state(class service.Class, elig announce.Eligibility, live func(string) bool) (announce.State, []config.Problem, error) {
	in, err := c.listers.Input()
	if err != nil {
		return announce.State{}, nil, err
	}
	cfg, problems := c.lastGood.Build(in)
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return announce.State{}, nil, err
	}
	svcs, err := c.svcCache.services(serviceSource{
		list:     func() ([]*corev1.Service, error) { return c.services.List(labels.Everything()) },
		get:      func(ns, name string) (*corev1.Service, error) { return c.services.Services(ns).Get(name) },
		ours:     class.IsOurs,
		slicesOf: c.endpointSlicesOf,
	})
	if err != nil {
		return announce.State{}, nil, err
	}
	return announce.State{
		Config:   cfg,
		Nodes:    nodes,
		Services: svcs,
		Live:     live,

		Eligibility: elig,
	}, problems, nil
}

// nodeAddresses returns a node's InternalIP addresses, IPv4 and IPv6.
func nodeAddresses(n *corev1.Node) (v4, v6 netip.Addr) {
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		ip, err := netip.ParseAddr(a.Address)
		if err != nil {
			continue
		}
		if ip.Is4() && !v4.IsValid() {
			v4 = ip
		}
		if ip.Is6() && !v6.IsValid() {
			v6 = ip
		}
	}
	return v4, v6
}
