package layer2

import (
	"cmp"
	"maps"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/herald-lb/herald/internal/l2owner"
)

// reconcileLocked computes where each wanted VIP is announced and applies
// the difference: the VIPs' machines step first (claimed, released,
// dropped) and the ownership snapshot is stored (so a withdrawn VIP is
// not answered any more, and a releasing one not advertised), then what
// the machines asked for is sent on the responders still open (telling a
// beaten host, asking who answers), then responders are synced, then
// gratuitous announcements start.
func (a *Announcer) reconcileLocked() {
	assigned := a.assignLocked()
	sk := &sink{asks: map[responderKey][]netip.Addr{}, announce: map[vipOnLink]bool{}}
	a.syncStatesLocked(assigned, sk)
	prev := a.owned.Load()
	o := newOwnership(assigned, a.states)
	a.owned.Store(&o)
	for k, vips := range sk.asks {
		a.askAll(k, vips)
	}
	recreated := a.syncRespondersLocked(assigned)
	a.logAndAnnounceLocked(a.assigned, assigned, *prev, recreated, sk.announce)
	a.assigned = assigned
}

// syncStatesLocked gives each VIP its state on each interface it is
// announced on (see nextVIPState), and feeds its machine the decision:
// claimed (new, or claimed back), released, or dropped (no longer
// announced there). The state of a releasing VIP outlives the interface
// choice, so that a link going down and up again does not undo a
// takeover; only SetAnnouncements listing the VIP as owned, or not at
// all, does. Actions that send on a responder run now, before
// responders close (a beaten host is told on the interface the VIP
// leaves); questions and new announcements are left to sk.
func (a *Announcer) syncStatesLocked(assigned map[netip.Addr][]string, sk *sink) {
	next := map[vipOnLink]*vipState{}
	now := time.Now()
	for vip, names := range assigned {
		for _, name := range names {
			k := vipOnLink{vip, name}
			old := a.states[k]
			s := nextVIPState(old, a.releasing[vip])
			next[k] = s
			if s == old {
				continue
			}
			kind := l2owner.Claim
			if s.releasing {
				kind = l2owner.Release
			}
			a.stepState(k, s, kind, now, sk)
		}
	}
	for k, s := range a.states {
		if _, ok := next[k]; ok {
			continue
		}
		if s.releasing && a.releasing[k.vip] {
			next[k] = s
			continue
		}
		a.stepState(k, s, l2owner.Drop, now, sk)
	}
	a.states = next
}

// stepState makes s the current state of the VIP on its interface (k)
// and feeds its machine an event of kind (Claim, Release, Drop); a VIP
// new there gets a machine.
func (a *Announcer) stepState(k vipOnLink, s *vipState, kind l2owner.Kind, now time.Time, sk *sink) {
	mac, _ := net.ParseMAC(a.net.ident[k.iface].mac)
	if s.own == nil {
		s.own = &owner{iface: k.iface, vip: k.vip, m: l2owner.New(a.machineConfig(k.vip, mac))}
	}
	o := s.own
	o.mu.Lock()
	defer o.mu.Unlock()
	if kind == l2owner.Drop {
		a.stepLocked(o, mac, l2owner.Event{Kind: kind, At: now}, sk)
		o.dropped = true
		return
	}
	o.s = s
	a.stepLocked(o, mac, l2owner.Event{Kind: kind, At: now}, sk)
}

// assignLocked runs ChooseInterfaces for every wanted VIP, keeping only
// interfaces a responder can be opened on. It logs a warning once for each
// problem that appears, and forgets problems that went away.
func (a *Announcer) assignLocked() map[netip.Addr][]string {
	assigned := map[netip.Addr][]string{}
	if a.runCtx == nil {
		return assigned
	}
	var problems []warning
	for _, vip := range slices.SortedFunc(maps.Keys(a.want), netip.Addr.Compare) {
		c := ChooseInterfaces(a.net.links, a.net.defaults, vip, a.want[vip], a.cfg.ExcludeInterfaces)
		for _, name := range c.MissingOverrides {
			problems = append(problems, warning{vip, name, "interface named in the L2Advertisement does not exist"})
		}
		var names []string
		for _, name := range c.Interfaces {
			if a.net.ident[name].mac == "" {
				problems = append(problems, warning{vip, name, "interface has no hardware address, not announcing on it"})
				continue
			}
			names = append(names, name)
		}
		if len(names) > 0 {
			assigned[vip] = names
		}
	}
	warned := map[warning]bool{}
	for _, w := range problems {
		if !a.warned[w] {
			a.log.Warn(w.msg, "ip", w.vip, "interface", w.iface)
		}
		warned[w] = true
	}
	a.warned = warned
	return assigned
}

// syncRespondersLocked opens a responder per interface and protocol in use,
// closes the others, recreates those whose link changed identity, and hands
// each its VIPs. It returns the keys of responders opened anew.
func (a *Announcer) syncRespondersLocked(assigned map[netip.Addr][]string) map[responderKey]bool {
	need := map[responderKey][]netip.Addr{}
	for vip, names := range assigned {
		for _, name := range names {
			k := responderKey{iface: name, proto: protocolOf(vip)}
			need[k] = append(need[k], vip)
		}
	}
	var closing []responderHandle
	for _, k := range sortedKeys(a.responders) {
		e := a.responders[k]
		if _, ok := need[k]; !ok || e.ident != a.net.ident[k.iface] {
			closing = append(closing, e.h)
			delete(a.responders, k)
		}
	}
	a.publishRespondersLocked() // before closing: their read loops may look
	for _, h := range closing {
		h.close()
	}
	opened := map[responderKey]bool{}
	for _, k := range sortedKeys(need) {
		e := a.responders[k]
		if e == nil {
			e = a.openLocked(k)
			a.responders[k] = e
			opened[k] = true
		}
		vips := need[k]
		slices.SortFunc(vips, netip.Addr.Compare)
		e.h.setVIPs(vips)
		e.h.nudge()
	}
	a.publishRespondersLocked()
	return opened
}

// publishRespondersLocked copies the running responders for responderOf.
func (a *Announcer) publishRespondersLocked() {
	running := make(map[responderKey]*responder, len(a.responders))
	for k, e := range a.responders {
		if r, ok := e.h.(*responder); ok {
			running[k] = r
		}
	}
	a.running.Store(&running)
}

func (a *Announcer) openLocked(k responderKey) *responderEntry {
	ident := a.net.ident[k.iface]
	mac, _ := net.ParseMAC(ident.mac)
	iface, proto := k.iface, k.proto
	spec := responderSpec{
		iface: iface,
		index: ident.index,
		mac:   mac,
		proto: proto,
		owns:  func(vip netip.Addr) bool { return a.owns(iface, vip) },
		answersFrom: func(vip netip.Addr) time.Time {
			return a.owned.Load().state(iface, vip).answersFrom()
		},
		advertises: func(vip netip.Addr) bool { return a.owned.Load().advertises(iface, vip) },
		announced:  func(vip netip.Addr) { a.owned.Load().state(iface, vip).markAnnounced() },
		releasing:  func(vip netip.Addr) bool { return a.owned.Load().releasing(iface, vip) },
		yield:      func(vip netip.Addr, by net.HardwareAddr) { a.foreignAnnouncement(iface, proto, vip, mac, by) },
		notice:     func(vip netip.Addr, by net.HardwareAddr) { a.noticeConflict(iface, proto, vip, mac, by) },
		gaveUp:     func(vip netip.Addr, by net.HardwareAddr) { a.gaveUp(iface, proto, vip, by) },
		heard:      func(vip netip.Addr, by net.HardwareAddr) { a.answered(iface, vip, by) },
		asked:      func(vip netip.Addr, by net.HardwareAddr) { a.asked(iface, vip, by) },
		awake:      a.awakeCheck(),
		vips:       func() []netip.Addr { return a.owned.Load().advertised(iface) },
		refresh:    a.cfg.Refresh,
		announces:  func(vip netip.Addr) bool { return a.owned.Load().state(iface, vip) != nil },
		log:        a.log,
		metrics:    a.metrics,
		grat:       a.cfg.Gratuitous,
	}
	return &responderEntry{h: a.start(a.runCtx, spec), ident: ident}
}

// logAndAnnounceLocked logs each VIP and interface pair that starts or stops
// being announced or handed over, starts a gratuitous burst where a VIP
// becomes owned (new, claimed back from releasing, or on a responder just
// reopened) and stops the burst where it becomes releasing. prev is the
// ownership snapshot of before.
func (a *Announcer) logAndAnnounceLocked(before, after map[netip.Addr][]string, prev ownership, reopened map[responderKey]bool, announce map[vipOnLink]bool) {
	for _, vip := range slices.SortedFunc(maps.Keys(before), netip.Addr.Compare) {
		for _, name := range before[vip] {
			if slices.Contains(after[vip], name) {
				continue
			}
			a.log.Info("stopped announcing VIP", "ip", vip, "interface", name, "reason", a.stopReasonLocked(vip, name, prev))
			// A responder that stays open (it serves other VIPs) may
			// be sending for vip right now: wait for that, so that
			// SetAnnouncements returns with vip silent. A closed one
			// has already waited for its goroutines.
			if e := a.responders[responderKey{iface: name, proto: protocolOf(vip)}]; e != nil {
				e.h.silence(vip)
			}
		}
	}
	for _, vip := range slices.SortedFunc(maps.Keys(after), netip.Addr.Compare) {
		for _, name := range after[vip] {
			k := responderKey{iface: name, proto: protocolOf(vip)}
			h := a.responders[k].h
			isNew := !slices.Contains(before[vip], name)
			switch {
			case a.releasing[vip] && isNew:
				a.log.Info("answering for VIP being handed over, not advertising it", "ip", vip, "interface", name, "protocol", k.proto)
			case a.releasing[vip] && prev.advertises(name, vip):
				a.log.Info("releasing VIP: answering until another host announces it", "ip", vip, "interface", name, "protocol", k.proto)
				h.silence(vip)
			case a.releasing[vip]:
			case isNew && announce[vipOnLink{vip, name}]:
				a.log.Info("started announcing VIP", "ip", vip, "interface", name, "protocol", k.proto)
				h.announce(vip)
			case announce[vipOnLink{vip, name}]:
				a.log.Info("claiming VIP back", "ip", vip, "interface", name, "protocol", k.proto,
					"takenOver", prev.yielded(name, vip))
				h.announce(vip)
			case reopened[k]:
				a.log.Info("announcing VIP again on reopened interface", "ip", vip, "interface", name, "protocol", k.proto)
				h.announce(vip)
			}
		}
	}
}

// stopReasonLocked says why vip stopped being announced on iface.
func (a *Announcer) stopReasonLocked(vip netip.Addr, iface string, prev ownership) string {
	_, wanted := a.want[vip]
	switch {
	case a.runCtx == nil:
		return "announcer stopped"
	case !wanted && prev.yielded(iface, vip):
		return "handed over"
	case !wanted:
		return "VIP withdrawn"
	}
	return "interface no longer chosen"
}

func protocolOf(vip netip.Addr) string {
	if vip.Is4() {
		return protoARP
	}
	return protoNDP
}

func sortedKeys[V any](m map[responderKey]V) []responderKey {
	return slices.SortedFunc(maps.Keys(m), func(a, b responderKey) int {
		return cmp.Or(cmp.Compare(a.iface, b.iface), cmp.Compare(a.proto, b.proto))
	})
}
