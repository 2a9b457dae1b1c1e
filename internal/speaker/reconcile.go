package speaker

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/herald-lb/herald/internal/announce"
)

// reconcile computes what this node announces and applies the difference
// to both backends.
func (s *Speaker) reconcile(ctx context.Context) error {
	// One at a time (the worker's, Shutdown's): the Service cache hands
	// out its own slice and the changes since the last reconcile.
	s.reconcileMu.Lock()
	defer s.reconcileMu.Unlock()
	start := time.Now()
	defer func() { s.metrics.reconcile.Observe(time.Since(start).Seconds()) }()
	welcomes, _ := s.memberList().(Welcomes)
	var gen uint64
	if welcomes != nil {
		gen = welcomes.Generation() // before any member state is read
	}
	st, _, err := s.state()
	if err != nil {
		return fmt.Errorf("reading state: %w", err)
	}
	changes := s.svcCache.takeChanges()
	s.joinMembers(st.Nodes)
	isolated := s.observeLiveness(st.Nodes)
	s.mu.Lock()
	defer s.mu.Unlock()
	held := s.currentHold()
	s.noteFallbacks(st)
	s.reconcileL2(st, changes, start, isolated, held)
	if welcomes != nil {
		welcomes.Applied(gen) // the members that started are handed their addresses
	}
	if err := s.reconcileBGP(ctx, st, changes, held); err != nil {
		return err
	}
	if ml := s.memberList(); ml == nil || ml.Settled() {
		s.ready.reconciled.Store(true)
	}
	s.statusChanged()
	return nil
}

// reconcileL2 decides and plans what this node answers ARP/NDP for. The
// memo and the plan are told what changed since the last reconcile
// (changes): only some Services, when nothing else did and the plan
// allows it (l2State.incremental, ungated options), else everything. The
// work is proportional to the change, and what this node announces is
// handed to the backend again only when it changed.
func (s *Speaker) reconcileL2(st announce.State, changes serviceChanges, now time.Time, isolated, held bool) {
	if s.opts.L2 == nil {
		return
	}
	ml := s.memberList()
	o := planOptions{settled: ml == nil || ml.Settled(), held: held, keep: isolated && !s.leaving.Load(),
		claimFrom: time.Unix(0, s.claimFrom.Load()), now: now, grace: s.opts.ReleaseGrace}
	ch := changes.asChanges()
	if !s.l2.incremental || !o.ungated() {
		ch = announce.Changes{All: true} // plan looks at every address
	}
	if !held { // held, nothing is announced: no decision to take
		ch = s.l2Memo.Update(st, ch, s.svcCache.holdersIn(st.Services))
	}
	p := s.l2.plan(s.opts.NodeName, ch, &s.l2Memo, o)
	s.metrics.l2Plans.WithLabelValues(planKind(ch)).Inc()
	if !p.unchanged {
		s.opts.L2.SetAnnouncements(p.want)
	}
	s.liftFences()
	claimed := make([]netip.Addr, 0, len(p.claimed))
	for _, o := range p.claimed {
		claimed = append(claimed, o.IP)
	}
	s.noteL2Since(claimed, announce.Changes{All: ch.All, IPs: p.left})
	s.metrics.announced.WithLabelValues("l2").Set(float64(len(s.l2.owned)))
	s.metrics.releasing.Set(float64(len(s.l2.releasing)))
	for _, o := range p.claimed {
		s.announcedL2(st, o)
	}
	for _, ip := range p.dropped {
		s.log.Info("stopped announcing", "ip", ip, "protocol", "l2")
	}
	if from := time.Unix(0, s.claimFrom.Load()); now.Before(from) {
		p.recheck = earliest(p.recheck, from) // claims and fence lifts wait until then
	}
	if !p.recheck.IsZero() {
		s.queue.AddAfter(reconcileKey, time.Until(p.recheck)+5*time.Millisecond)
	}
}

// announcedL2 logs and tells the Services that this node now answers for
// their address.
func (s *Speaker) announcedL2(st announce.State, o announce.L2Owner) {
	ifaces := s.opts.L2.Interfaces(o.IP)
	proto := "ARP"
	if o.IP.Is6() {
		proto = "NDP"
	}
	if len(ifaces) == 0 {
		s.log.Warn("owns an address but has no interface to announce it on", "ip", o.IP, "interfaces", o.Interfaces)
		for _, key := range o.Services {
			if svc := s.service(key); svc != nil {
				s.rec.Eventf(svc, corev1.EventTypeWarning, "AnnounceFailed",
					"node %s owns %s but has no usable interface for it (L2Advertisement interfaces %v; default: the interface holding the VIP's subnet, else the default route's)",
					s.opts.NodeName, o.IP, o.Interfaces)
			}
		}
		return
	}
	s.log.Info("announcing", "ip", o.IP, "protocol", "l2", "interfaces", ifaces, "services", o.Services)
	for _, key := range o.Services {
		if svc := s.service(key); svc != nil {
			s.rec.Eventf(svc, corev1.EventTypeNormal, "NodeAssigned", "announcing %s from node %s on %s (%s)", o.IP, s.opts.NodeName, strings.Join(ifaces, ", "), proto)
		}
	}
}

// reconcileBGP decides this node's BGP sessions and routes and hands them
// to the backend. When only some Services changed since the last
// reconcile (changes) and nothing else did, it works out and hands over
// only their prefixes (BGPMemo.Update with their keys, ApplyPaths): the
// work is proportional to the change. Otherwise it hands over everything.
func (s *Speaker) reconcileBGP(ctx context.Context, st announce.State, changes serviceChanges, held bool) error {
	if s.opts.BGP == nil {
		return nil
	}
	// The memo learns of changed Services from change sets alone: those
	// of a reconcile that does not update it wait for the next one.
	ch := s.bgpPending.Merge(changes.asChanges())
	s.bgpPending = ch
	if s.leaving.Load() {
		s.bgpAdvertising, s.bgpApplied = false, bgpApplied{}
		return nil
	}
	var v4, v6 netip.Addr
	switch me, err := s.nodes.Get(s.opts.NodeName); {
	case apierrors.IsNotFound(err):
		// The cluster removed this node while its speaker runs (its
		// kubelet stopped, then its Node deleted): it is no load-balancer
		// node any more, as the other speakers see it. Like a held speaker
		// it closes its sessions and withdraws its routes, until the
		// kubelet registers the node anew.
		if !s.ownNodeGone {
			s.log.Warn("this node's Node object is gone: no BGP session and no route until it is registered again")
		}
		s.ownNodeGone, held = true, true
	case err != nil:
		return fmt.Errorf("node %s: %w", s.opts.NodeName, err)
	default:
		if s.ownNodeGone {
			s.log.Info("this node's Node object is back")
		}
		s.ownNodeGone = false
		v4, v6 = nodeAddresses(me)
	}
	if !held {
		s.bgpMemo.Update(st, s.opts.NodeName, ch) // nothing to do when nothing it depends on changed
		s.bgpPending = announce.Changes{}
	}
	vrfs, vrfKey, vrfErr := s.vrfTable()
	applied := bgpApplied{ok: true, v4: v4, v6: v6, vrfs: vrfKey}
	if !held && s.bgpMemo.Same() && s.bgpApplied == applied {
		// Nothing the sessions and routes depend on changed (member-list
		// and Lease changes are not among it) and the last Apply took:
		// no O(routes) Apply on the backend, no events to compare.
		return nil
	}
	// Only Services changed, and the last Apply took with these node
	// addresses: the backend gets the changed prefixes alone, and only
	// the Services whose routes may have changed are compared for events.
	// The backend applies the whole desired state itself when it has
	// nothing to build on.
	incremental := !held && !s.bgpMemo.Changes().All && s.bgpApplied == applied
	var err error
	var res announce.BGPResult // held: no session, no route
	if incremental {
		err = s.opts.BGP.ApplyPaths(ctx, changedPaths(&s.bgpMemo))
	} else {
		if !held {
			res = s.bgpMemo.Result()
		}
		d := desiredBGP(res, st.Config, v4, v6)
		placeVRFs(d.Sessions, vrfs, vrfErr, s.opts.NodeName)
		err = s.opts.BGP.Apply(ctx, d)
	}
	s.metrics.bgpApplies.WithLabelValues(applyKind(incremental)).Inc()
	s.bgpApplied = bgpApplied{ok: err == nil && !held, v4: v4, v6: v6, vrfs: vrfKey}
	s.ready.bgpFirst.CompareAndSwap(0, s.opts.Now().UnixNano())
	if err != nil && (s.lastBGP == nil || s.lastBGP.Error() != err.Error()) {
		s.log.Warn("BGP configuration partly refused", "error", err)
	}
	s.lastBGP = err
	s.bgpAdvertising = !held
	s.metrics.announced.WithLabelValues("bgp").Set(float64(s.bgpRouteCount()))
	if incremental {
		s.bgpEvents(changedAdvertisements(&s.bgpMemo), false)
	} else {
		s.bgpEvents(advertisedRoutes(res), true)
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return nil // refused sessions are reported, not retried in a loop
}

// planKind is the l2_plans_total kind of a plan given ch.
func planKind(ch announce.Changes) string { return applyKind(!ch.All) }

func applyKind(incremental bool) string {
	if incremental {
		return "changed"
	}
	return "full"
}

// bgpEvents records an event for each Service whose advertised routes
// changed and logs those withdrawn. routes holds every Service's routes
// when all, else only those that may have changed (nil: none left).
func (s *Speaker) bgpEvents(routes map[string][]string, all bool) {
	if s.bgpAdvert == nil {
		s.bgpAdvert = map[string][]string{}
	}
	for key, desc := range routes {
		if len(desc) == 0 || slices.Equal(s.bgpAdvert[key], desc) {
			continue
		}
		if svc := s.service(key); svc != nil {
			s.rec.Eventf(svc, corev1.EventTypeNormal, "BGPAdvertised", "node %s advertises %s", s.opts.NodeName, strings.Join(desc, "; "))
		}
		s.log.Info("advertising", "service", key, "routes", desc)
	}
	for key := range s.bgpAdvert {
		if desc, ok := routes[key]; (all && !ok) || (ok && len(desc) == 0) {
			s.log.Info("withdrawn", "service", key, "protocol", "bgp")
			delete(s.bgpAdvert, key)
		}
	}
	for key, desc := range routes {
		if len(desc) > 0 {
			s.bgpAdvert[key] = desc
		}
	}
}

// bgpRouteCount is the number of routes this node advertises. Call with
// s.mu held.
func (s *Speaker) bgpRouteCount() int {
	if !s.bgpAdvertising {
		return 0
	}
	return s.bgpMemo.RouteCount()
}

// bgpRoutesNow are the routes this node advertises, laid out (O(routes))
// when they changed since the last call. Call with s.mu held.
func (s *Speaker) bgpRoutesNow() []announce.Route {
	if !s.bgpAdvertising {
		return nil
	}
	return s.bgpMemo.Result().Routes
}

// bgpApplied is what a successful BGP Apply outside a hold was given
// besides the memo's result: the node's addresses.
type bgpApplied struct {
	ok     bool
	v4, v6 netip.Addr
	vrfs   string // vrf.Table.Key of the node's VRFs
}

// service returns a Service from the lister, nil when it is gone.
func (s *Speaker) service(key string) *corev1.Service {
	ns, name, _ := strings.Cut(key, "/")
	svc, err := s.services.Services(ns).Get(name)
	if err != nil {
		return nil
	}
	return svc
}

// joinMembers hands the other nodes' addresses to the member list, and
// the Node names to Retain, when they change.
func (s *Speaker) joinMembers(nodes []*corev1.Node) {
	ml := s.memberList()
	if ml == nil {
		return
	}
	var addrs, names []string
	for _, n := range nodes {
		names = append(names, n.Name)
		if n.Name == s.opts.NodeName {
			continue
		}
		if v4, v6 := nodeAddresses(n); v4.IsValid() {
			addrs = append(addrs, v4.String())
		} else if v6.IsValid() {
			addrs = append(addrs, v6.String())
		}
	}
	slices.Sort(addrs)
	slices.Sort(names)
	addrKey, nameKey := strings.Join(addrs, ","), strings.Join(names, ",")
	s.mu.Lock()
	addrsChanged, namesChanged := addrKey != s.joined, nameKey != s.retained
	s.joined, s.retained = addrKey, nameKey
	s.mu.Unlock()
	if addrsChanged {
		ml.Join(addrs)
	}
	if namesChanged {
		ml.Retain(names)
	}
}

func joinNames(names []string) string { return strings.Join(names, ", ") }

// noteFallbacks logs, when the list changes, the addresses announced for
// the pool their Service's annotation names because that pool's status
// has no record of its outside addresses yet (announce.AnnotationFallbacks).
func (s *Speaker) noteFallbacks(st announce.State) {
	fb := announce.AnnotationFallbacks(st)
	key := strings.Join(fb, ",")
	if key == s.fallbacks {
		return
	}
	s.fallbacks = key
	if len(fb) == 0 {
		s.log.Info("every address outside its pool's ranges is found in a pool's record")
		return
	}
	s.log.Warn("addresses outside every pool's ranges follow their Service's pool annotation until the pool's status records them (no record yet: upgrade or a pool edit not yet described by the controller)",
		"addresses", fb)
}
