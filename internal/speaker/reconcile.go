package speaker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/internal/announce"
)

// reconcile computes what this node announces and applies the difference
// to both backends.
func (s *Speaker) reconcile(ctx context.Context) error {
	start := time.Now()
	defer func() { s.metrics.reconcile.Observe(time.Since(start).Seconds()) }()
	s.mu.Lock()
	st, _, err := s.state()
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("reading state: %w", err)
	}
	s.joinMembers(st.Nodes)
	s.mu.Lock()
	defer s.mu.Unlock()
	// Nothing a decision reads changed (a Node heartbeat, a status write
	// announce ignores, a hand-over timer): the last decisions stand.
	changed := s.memo.take(st.Live)
	s.reconcileL2(st, changed, start)
	return s.reconcileBGP(ctx, st, changed)
}

func (s *Speaker) reconcileL2(st announce.State, changed bool, now time.Time) {
	if s.opts.L2 == nil {
		return
	}
	settled := s.opts.Members == nil || s.opts.Members.Settled()
	if !changed && s.memo.planned && s.memo.settled == settled && len(s.l2.releasing) == 0 {
		return // same owners, nothing being handed over: the same announcements
	}
	s.memo.planned, s.memo.settled = true, settled
	p := s.l2.plan(s.opts.NodeName, s.memo.l2Result(st, changed), settled, now, s.opts.ReleaseGrace)
	s.opts.L2.SetAnnouncements(p.want)
	s.metrics.announced.WithLabelValues("l2").Set(float64(len(s.l2.owned)))
	s.metrics.releasing.Set(float64(len(s.l2.releasing)))
	for _, o := range p.claimed {
		s.announcedL2(st, o)
	}
	for _, ip := range p.dropped {
		s.log.Info("stopped announcing", "ip", ip, "protocol", "l2")
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

func (s *Speaker) reconcileBGP(ctx context.Context, st announce.State, changed bool) error {
	if s.opts.BGP == nil || s.leaving.Load() {
		return nil
	}
	if !changed && s.bgpApplied && s.lastBGP == nil {
		return nil // the routes and sessions applied last time stand
	}
	me, err := s.nodes.Get(s.opts.NodeName)
	if err != nil {
		return fmt.Errorf("node %s: %w", s.opts.NodeName, err)
	}
	v4, v6 := nodeAddresses(me)
	res := announce.BGP(st, s.opts.NodeName)
	err = s.opts.BGP.Apply(ctx, desiredBGP(res, st.Config, v4, v6))
	if err != nil && (s.lastBGP == nil || s.lastBGP.Error() != err.Error()) {
		s.log.Warn("BGP configuration partly refused", "error", err)
	}
	s.lastBGP, s.bgpApplied = err, true
	routes := advertisedRoutes(res)
	s.metrics.announced.WithLabelValues("bgp").Set(float64(len(res.Routes)))
	for key, desc := range routes {
		if slices.Equal(s.bgpAdvert[key], desc) {
			continue
		}
		if svc := s.service(key); svc != nil {
			s.rec.Eventf(svc, corev1.EventTypeNormal, "BGPAdvertised", "node %s advertises %s", s.opts.NodeName, strings.Join(desc, "; "))
		}
		s.log.Info("advertising", "service", key, "routes", desc)
	}
	for key := range s.bgpAdvert {
		if _, ok := routes[key]; !ok {
			s.log.Info("withdrawn", "service", key, "protocol", "bgp")
		}
	}
	s.bgpAdvert = routes
	if errors.Is(err, context.Canceled) {
		return err
	}
	return nil // refused sessions are reported, not retried in a loop
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
	if s.opts.Members == nil {
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
		s.opts.Members.Join(addrs)
	}
	if namesChanged {
		s.opts.Members.Retain(names)
	}
}

func joinNames(names []string) string { return strings.Join(names, ", ") }
