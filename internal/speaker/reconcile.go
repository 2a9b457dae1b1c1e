package speaker

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

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
	welcomes, _ := s.liveness.memberList().(Welcomes)
	var gen uint64
	if welcomes != nil {
		gen = welcomes.Generation() // before any member state is read
	}
	st, _, err := s.state()
	if err != nil {
		return fmt.Errorf("reading state: %w", err)
	}
	changes := s.svcCache.takeChanges()
	s.liveness.join(st.Nodes)
	isolated := s.liveness.observe(st.Nodes)
	s.mu.Lock()
	defer s.mu.Unlock()
	held := s.currentHold()
	s.noteFallbacks(st)
	s.reconcileL2(st, changes, start, isolated, held)
	if welcomes != nil {
		welcomes.Applied(gen) // the members that started are handed their addresses
	}
	if s.bgp != nil {
		if err := s.bgp.reconcile(ctx, st, changes.asChanges(), held, s.leaving.Load()); err != nil {
			return err
		}
	}
	if s.liveness.settled() {
		s.ready.reconciled.Store(true)
	}
	s.status.changed()
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
	o := planOptions{settled: s.liveness.settled(), held: held, keep: isolated && !s.leaving.Load(),
		claimFrom: time.Unix(0, s.liveness.claimFrom.Load()), now: now, grace: s.opts.ReleaseGrace}
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
	s.liveness.liftFences()
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
	if from := time.Unix(0, s.liveness.claimFrom.Load()); now.Before(from) {
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

// planKind is the l2_plans_total kind of a plan given ch.
func planKind(ch announce.Changes) string { return applyKind(!ch.All) }

// service returns a Service from the lister, nil when it is gone.
func (s *Speaker) service(key string) *corev1.Service {
	ns, name, _ := strings.Cut(key, "/")
	svc, err := s.services.Services(ns).Get(name)
	if err != nil {
		return nil
	}
	return svc
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
