package speaker

import (
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/internal/announce"
)

// l2Reconciler decides and plans what this node answers ARP/NDP for and
// hands it to the L2 backend, one plan per reconcile (l2.go), and
// reports on the addresses it announces: events on their Services, and
// since when it answers each (for the status). It owns what this node
// announces and hands over, and the memo of the last decisions.
type l2Reconciler struct {
	backend  L2 // nil: no L2 mode, nothing announced
	node     string
	grace    time.Duration // ReleaseGrace
	liveness *liveness     // settled, claims held back, fences to lift
	leaving  func() bool
	holders  func([]announce.Service) func(netip.Addr) []*announce.Service // the Services holding an address (serviceCache.holdersIn)
	// reconcileAfter asks for a reconcile after a delay (0: now).
	reconcileAfter func(time.Duration)
	events         serviceEvents
	log            *slog.Logger
	metrics        *metrics
	now            func() time.Time

	mu    sync.Mutex // guards the state below
	state l2State
	memo  announce.L2Memo // the L2 decisions of the last reconcile, per address
	since map[netip.Addr]time.Time
}

// announcedCount is how many addresses this node still answers for, its
// own and those it is handing over.
func (r *l2Reconciler) announcedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.announcedCount()
}

// entries are the addresses this node owns, with their interfaces and
// since when it answers them, for its status.
func (r *l2Reconciler) entries() []l2Entry {
	r.mu.Lock()
	var l2 []l2Entry
	for _, ip := range slices.SortedFunc(maps.Keys(r.state.owned), netip.Addr.Compare) {
		l2 = append(l2, l2Entry{IP: ip, Since: r.since[ip]})
	}
	r.mu.Unlock()
	if r.backend != nil {
		for i := range l2 {
			l2[i].Interfaces = r.backend.Interfaces(l2[i].IP)
		}
	}
	return l2
}

// reconcile decides and plans what this node answers ARP/NDP for. The
// memo and the plan are told what changed since the last reconcile
// (changes): only some Services, when nothing else did and the plan
// allows it (l2State.incremental, ungated options), else everything. The
// work is proportional to the change, and what this node announces is
// handed to the backend again only when it changed.
func (r *l2Reconciler) reconcile(st announce.State, changes serviceChanges, now time.Time, isolated, held bool) {
	if r.backend == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	o := planOptions{settled: r.liveness.settled(), held: held, keep: isolated && !r.leaving(),
		claimFrom: time.Unix(0, r.liveness.claimFrom.Load()), now: now, grace: r.grace}
	ch := changes.asChanges()
	if !r.state.incremental || !o.ungated() {
		ch = announce.Changes{All: true} // plan looks at every address
	}
	if !held { // held, nothing is announced: no decision to take
		ch = r.memo.Update(st, ch, r.holders(st.Services))
	}
	p := r.state.plan(r.node, ch, &r.memo, o)
	r.metrics.l2Plans.WithLabelValues(planKind(ch)).Inc()
	if !p.unchanged {
		r.backend.SetAnnouncements(p.want)
	}
	r.liveness.liftFences()
	claimed := make([]netip.Addr, 0, len(p.claimed))
	for _, o := range p.claimed {
		claimed = append(claimed, o.IP)
	}
	r.noteSince(claimed, announce.Changes{All: ch.All, IPs: p.left})
	r.metrics.announced.WithLabelValues("l2").Set(float64(len(r.state.owned)))
	r.metrics.releasing.Set(float64(len(r.state.releasing)))
	for _, o := range p.claimed {
		r.announced(st, o)
	}
	for _, ip := range p.dropped {
		r.log.Info("stopped announcing", "ip", ip, "protocol", "l2")
	}
	if from := time.Unix(0, r.liveness.claimFrom.Load()); now.Before(from) {
		p.recheck = earliest(p.recheck, from) // claims and fence lifts wait until then
	}
	if !p.recheck.IsZero() {
		r.reconcileAfter(time.Until(p.recheck) + 5*time.Millisecond)
	}
}

// announced logs and tells the Services that this node now answers for
// their address.
func (r *l2Reconciler) announced(st announce.State, o announce.L2Owner) {
	ifaces := r.backend.Interfaces(o.IP)
	proto := "ARP"
	if o.IP.Is6() {
		proto = "NDP"
	}
	if len(ifaces) == 0 {
		r.log.Warn("owns an address but has no interface to announce it on", "ip", o.IP, "interfaces", o.Interfaces)
		for _, key := range o.Services {
			r.events.eventf(key, corev1.EventTypeWarning, "AnnounceFailed",
				"node %s owns %s but has no usable interface for it (L2Advertisement interfaces %v; default: the interface holding the VIP's subnet, else the default route's)",
				r.node, o.IP, o.Interfaces)
		}
		return
	}
	r.log.Info("announcing", "ip", o.IP, "protocol", "l2", "interfaces", ifaces, "services", o.Services)
	for _, key := range o.Services {
		r.events.eventf(key, corev1.EventTypeNormal, "NodeAssigned", "announcing %s from node %s on %s (%s)", o.IP, r.node, strings.Join(ifaces, ", "), proto)
	}
}

// yielded records that another node took over an address this node was
// releasing (the L2 backend's machine yielded to it, see
// internal/l2owner). The backend stops answering on the interface where
// it saw it; the release ends only once no interface still answers (an
// address announced on two links is taken over on each separately).
func (r *l2Reconciler) yielded(ip netip.Addr) {
	if r.backend != nil && len(r.backend.Interfaces(ip)) > 0 {
		return
	}
	r.mu.Lock()
	r.state.yielded(ip)
	r.mu.Unlock()
	r.reconcileAfter(0)
}

// conflict records, as a Warning event on the Services holding vip, that
// another host (MAC by) announced an address this node announces, and what
// the L2 fence decided: won (this node keeps answering) or lost (it
// stopped). The event loop calls it for Events.Conflict.
func (r *l2Reconciler) conflict(vip netip.Addr, iface string, by net.HardwareAddr, won bool) {
	r.mu.Lock()
	o, ok := r.state.owned[vip]
	r.mu.Unlock()
	if !ok {
		return
	}
	verdict := "lost the tie-break and stopped answering"
	if won {
		verdict = "won the tie-break and keeps answering"
	}
	for _, key := range o.Services {
		r.events.eventf(key, corev1.EventTypeWarning, "AddressConflict",
			"node %s and another host (MAC %s) both announce %s on %s: node %s %s (split brain: check that the speakers reach each other on the member-list port)",
			r.node, by, vip, iface, r.node, verdict)
	}
}

// foreignClaim records, as a Warning event on the Services holding vip,
// that a host that is no other speaker's node (MAC by) announced an
// address this node announces, and that this node kept answering and
// announced it again. The event loop calls it for Events.ForeignClaim.
func (r *l2Reconciler) foreignClaim(vip netip.Addr, iface string, by net.HardwareAddr) {
	r.mu.Lock()
	o, ok := r.state.owned[vip]
	r.mu.Unlock()
	if !ok {
		return
	}
	for _, key := range o.Services {
		r.events.eventf(key, corev1.EventTypeWarning, "ForeignAddressClaim",
			"a host that runs no Herald speaker (MAC %s) announces %s on %s: node %s keeps answering and announced it again (a misconfigured host with this address, or an attempt to take it over)",
			by, vip, iface, r.node)
	}
}

// noteSince records when this node started answering for each address
// it owns: claimed now, or owned without a time yet; an address it no
// longer owns is forgotten. ch names the addresses whose ownership may
// have changed besides claimed (all of them with ch.All; after a plan of
// some addresses, those it left): the others' times stay as they are. Call
// with r.mu held.
func (r *l2Reconciler) noteSince(claimed []netip.Addr, ch announce.Changes) {
	now := r.now()
	for _, ip := range claimed {
		r.since[ip] = now
	}
	if !ch.All {
		for _, ip := range ch.IPs {
			r.settleSince(ip, now)
		}
		return
	}
	for ip := range r.since {
		r.settleSince(ip, now)
	}
	for ip := range r.state.owned {
		r.settleSince(ip, now)
	}
}

// settleSince brings the time of one address in line with what this
// node owns.
func (r *l2Reconciler) settleSince(ip netip.Addr, now time.Time) {
	_, owned := r.state.owned[ip]
	_, known := r.since[ip]
	switch {
	case !owned:
		delete(r.since, ip)
	case !known:
		r.since[ip] = now
	}
}
