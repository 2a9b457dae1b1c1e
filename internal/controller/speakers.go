package controller

import (
	"context"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/k8s"
)

// What the speakers report, for herald.dev/Announced: each node's
// SpeakerStatus, indexed by what it announces, and the speakers' liveness
// Leases. A report counts only while its speaker's Lease is fresh (a
// crashed speaker cannot take its report back).

// speakersByAnnounced indexes SpeakerStatuses by announcedKeys.
const speakersByAnnounced = "announced"

// announcedKeys are the index keys of a SpeakerStatus, each with the time
// the speaker started announcing it (empty for BGP): "l2/<address>" for an
// address it answers for, "bgp/<prefix>" for a prefix it sends on some
// established session.
func announcedKeys(s *v1beta1.SpeakerStatus) map[string]string {
	out := map[string]string{}
	if s == nil {
		return out
	}
	for _, a := range s.Status.L2 {
		out["l2/"+a.Address] = a.Since.UTC().Format(time.RFC3339)
	}
	for _, b := range s.Status.BGP {
		for _, p := range b.Prefixes {
			out["bgp/"+p] = ""
		}
	}
	return out
}

func indexAnnounced(obj any) ([]string, error) {
	s, ok := obj.(*v1beta1.SpeakerStatus)
	if !ok {
		return nil, nil
	}
	return slices.Sorted(maps.Keys(announcedKeys(s))), nil
}

func (c *Controller) setupSpeakerInformers() error {
	c.leaseInformers = informers.NewSharedInformerFactoryWithOptions(c.kube, 0, informers.WithNamespace(c.opts.Namespace),
		informers.WithTransform(k8s.DropManagedFields), informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = v1beta1.LabelSpeakerLiveness + "=true"
		}))
	leaseInf := c.leaseInformers.Coordination().V1().Leases()
	c.leases = leaseInf.Lister().Leases(c.opts.Namespace)
	onLease := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if l, ok := obj.(*coordinationv1.Lease); ok && strings.HasPrefix(l.Name, v1beta1.SpeakerLeasePrefix) {
			c.leaseQueue.Add(strings.TrimPrefix(l.Name, v1beta1.SpeakerLeasePrefix))
		}
	}
	if _, err := leaseInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onLease, UpdateFunc: func(_, obj any) { onLease(obj) }, DeleteFunc: onLease,
	}); err != nil {
		return err
	}
	statusInf := c.heraldInformers.Herald().V1beta1().SpeakerStatuses().Informer()
	if err := statusInf.SetTransform(func(obj any) (any, error) {
		if s, ok := obj.(*v1beta1.SpeakerStatus); ok {
			s.ManagedFields = nil
		}
		return obj, nil
	}); err != nil {
		return err
	}
	if err := statusInf.AddIndexers(cache.Indexers{speakersByAnnounced: indexAnnounced}); err != nil {
		return err
	}
	c.speakerIndex = statusInf.GetIndexer()
	if _, err := statusInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onSpeakerStatus(nil, obj) },
		UpdateFunc: c.onSpeakerStatus,
		DeleteFunc: func(obj any) { c.onSpeakerStatus(obj, nil) },
	}); err != nil {
		return err
	}
	c.synced = append(c.synced, leaseInf.Informer().HasSynced, statusInf.HasSynced)
	return nil
}

func asSpeakerStatus(obj any) *v1beta1.SpeakerStatus {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	s, _ := obj.(*v1beta1.SpeakerStatus)
	return s
}

// onSpeakerStatus queues the configuration when a speaker's refused
// sessions changed, and the Services whose addresses a speaker started
// or stopped reporting: only what changed, found by the ingress-IP index,
// so a report costs the same with 10 or 10,000 Services. An aggregated
// BGP prefix (shorter than a host route) queues every Service; such
// prefixes change only with the configuration.
func (c *Controller) onSpeakerStatus(old, obj any) {
	if refusalsKey(asSpeakerStatus(old)) != refusalsKey(asSpeakerStatus(obj)) {
		c.configQueue.Add(configKey) // the BGPPeers' SessionsConfigured
	}
	before, after := announcedKeys(asSpeakerStatus(old)), announcedKeys(asSpeakerStatus(obj))
	changed := map[string]bool{}
	for k, v := range before {
		if w, ok := after[k]; !ok || w != v {
			changed[k] = true
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			changed[k] = true
		}
	}
	for k := range changed {
		_, s, _ := strings.Cut(k, "/")
		ip, err := netip.ParseAddr(s)
		if err != nil {
			p, perr := netip.ParsePrefix(s)
			if perr != nil {
				continue
			}
			if !p.IsSingleIP() {
				c.enqueueAllServices()
				return
			}
			ip = p.Addr()
		}
		c.enqueueByIngressIP(ip)
	}
}

func (c *Controller) enqueueByIngressIP(ip netip.Addr) {
	objs, _ := c.serviceIndex.ByIndex(servicesByIngressIP, ip.String())
	for _, o := range objs {
		if m, ok := o.(metav1.Object); ok {
			c.serviceQueue.Add(cache.ObjectName{Namespace: m.GetNamespace(), Name: m.GetName()})
		}
	}
}

// speakerAlive says whether a node's speaker Lease is fresh now.
func (c *Controller) speakerAlive(node string) bool {
	l, err := c.leases.Get(v1beta1.SpeakerLeasePrefix + node)
	return err == nil && k8s.LeaseFresh(l, time.Now())
}

// syncLease notices a speaker going up or down (its Lease renewed after
// expiring, expired, or deleted) and queues the Services whose condition
// depends on that node; while the Lease is fresh it comes back when it
// would expire.
func (c *Controller) syncLease(_ context.Context, node string) error {
	l, err := c.leases.Get(v1beta1.SpeakerLeasePrefix + node)
	if err != nil {
		l = nil
	}
	now := time.Now()
	alive := l != nil && k8s.LeaseFresh(l, now)
	if alive {
		c.leaseQueue.AddAfter(node, k8s.LeaseExpiry(l).Sub(now)+10*time.Millisecond)
	}
	changed, keys := c.announced.SpeakerSeen(node, alive)
	if !changed {
		return nil
	}
	c.log.Debug("speaker liveness changed", "node", node, "alive", alive)
	for _, k := range keys {
		c.serviceQueue.Add(k)
	}
	return nil
}

// reporters returns the nodes whose live speakers report index key k,
// the most recent claim first (an L2 address another node still reports
// was claimed before: a change of owner in progress, or a stale report).
func (c *Controller) reporters(k string) []string {
	objs, _ := c.speakerIndex.ByIndex(speakersByAnnounced, k)
	type rep struct{ node, since string }
	var out []rep
	for _, o := range objs {
		s := o.(*v1beta1.SpeakerStatus)
		node, ok := c.opts.Installation.Node(s.Name)
		if !ok || !c.speakerAlive(node) {
			continue
		}
		out = append(out, rep{node, l2Since(s, k)})
	}
	slices.SortFunc(out, func(a, b rep) int {
		if a.since != b.since {
			return strings.Compare(b.since, a.since)
		}
		return strings.Compare(a.node, b.node)
	})
	names := make([]string, len(out))
	for i, r := range out {
		names[i] = r.node
	}
	return names
}

// l2Since is when the speaker started answering for the address of key
// "l2/<address>" ("" for other keys): a binary search, the speaker writes
// its addresses sorted.
func l2Since(s *v1beta1.SpeakerStatus, k string) string {
	a, ok := strings.CutPrefix(k, "l2/")
	ip, err := netip.ParseAddr(a)
	if !ok || err != nil {
		return ""
	}
	cmp := func(e v1beta1.L2AnnouncementStatus, ip netip.Addr) int {
		x, err := netip.ParseAddr(e.Address)
		if err != nil {
			return -1
		}
		return x.Compare(ip)
	}
	if i, found := slices.BinarySearchFunc(s.Status.L2, ip, cmp); found {
		return s.Status.L2[i].Since.UTC().Format(time.RFC3339)
	}
	for _, e := range s.Status.L2 { // not sorted: written by someone else
		if e.Address == a {
			return e.Since.UTC().Format(time.RFC3339)
		}
	}
	return ""
}
