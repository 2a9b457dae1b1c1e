package controller

import (
	"net/netip"
	"sort"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/config"
	"github.com/herald-lb/herald/internal/controller/announced"
	"github.com/herald-lb/herald/internal/k8s"
)

// announcedCondition says whether the Service's addresses are announced,
// as the speakers report it (announced.Confirm): True naming the nodes
// that confirm, NotConfirmed, OwnerSpeakerDown, or the reasons no node
// may announce (NoAdvertisementMatches, NoEligibleNode, NoReadyEndpoint).
// ok is false when the Service has no address (no condition then).
func (c *Controller) announcedCondition(svc *corev1.Service, cfg *config.Config, ips []netip.Addr) (condition, bool) {
	if len(ips) == 0 {
		c.announced.DependOn(cache.MetaObjectToName(svc), nil)
		return condition{}, false
	}
	nodes, _ := c.nodes.List(labels.Everything())
	// Only the Services sharing an address with this one matter to its
	// status: the ingress-IP index finds them without listing every
	// Service, so a sync costs the same with 10 or 10,000 Services.
	seen := map[string]bool{}
	var sharers []*corev1.Service
	for _, ip := range ips {
		objs, _ := c.serviceIndex.ByIndex(servicesByIngressIP, ip.String())
		for _, o := range objs {
			s := o.(*corev1.Service)
			if k := s.Namespace + "/" + s.Name; !seen[k] {
				seen[k] = true
				sharers = append(sharers, s)
			}
		}
	}
	sort.Slice(sharers, func(i, j int) bool {
		return sharers[i].Namespace+"/"+sharers[i].Name < sharers[j].Namespace+"/"+sharers[j].Name
	})
	svcs := announce.ServicesFrom(sharers, c.opts.Class.IsOurs, c.endpointSlicesOf)
	key := svc.Namespace + "/" + svc.Name
	found := false
	for i := range svcs {
		if svcs[i].Key == key {
			svcs[i].IPs, found = ips, true // what is being written, not the stale status
		}
	}
	if !found {
		one := announce.ServicesFrom([]*corev1.Service{svc}, func(*corev1.Service) bool { return true }, c.endpointSlicesOf)
		one[0].IPs = ips
		svcs = append(svcs, one...)
	}
	// An address no pool contains follows, where the pools' records do
	// not say (announce's poolOf), the pool the allocator holds it from:
	// the controller's own decision, never the Service's annotation.
	for i := range svcs {
		svcs[i].Pool = ""
		if a, ok := c.alloc.Lookup(svcs[i].Key); ok {
			svcs[i].Pool = a.Pool
		}
	}
	state := announce.State{Config: cfg, Nodes: nodes, Services: svcs, Eligibility: c.opts.Eligibility}
	reports := map[string][]string{}
	for _, k := range announced.ReportKeys(state, ips) {
		reports[k] = c.reporters(k)
	}
	conf := announced.Confirm(announced.Input{State: state, Key: key, IPs: ips, Live: c.speakerAlive, Reports: reports})
	c.announced.DependOn(cache.MetaObjectToName(svc), conf.Deps)
	return condition{Type: v1beta1.ConditionAnnounced, Status: conf.Status == metav1.ConditionTrue,
		Unknown: conf.Status == metav1.ConditionUnknown, Reason: conf.Reason, Message: conf.Message}, true
}

func (c *Controller) endpointSlicesOf(svc *corev1.Service) []*discoveryv1.EndpointSlice {
	return k8s.SlicesOf(c.sliceIndex, svc)
}
