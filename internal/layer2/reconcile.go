package layer2

import (
	"cmp"
	"maps"
	"net"
	"net/netip"
	"slices"
)

// reconcileLocked computes where each wanted VIP is announced and applies
// the difference: ownership snapshot first (so a withdrawn VIP is not
// answered any more), then responders, then gratuitous announcements.
func (a *Announcer) reconcileLocked() {
	assigned := a.assignLocked()
	o := newOwnership(assigned)
	a.owned.Store(&o)
	recreated := a.syncRespondersLocked(assigned)
	a.logAndAnnounceLocked(a.assigned, assigned, recreated)
	a.assigned = assigned
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
			a.log.Warn(w.msg, "vip", w.vip, "interface", w.iface)
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
	for _, k := range sortedKeys(a.responders) {
		e := a.responders[k]
		if _, ok := need[k]; !ok || e.ident != a.net.ident[k.iface] {
			e.h.close()
			delete(a.responders, k)
		}
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
	return opened
}

func (a *Announcer) openLocked(k responderKey) *responderEntry {
	ident := a.net.ident[k.iface]
	mac, _ := net.ParseMAC(ident.mac)
	iface := k.iface
	spec := responderSpec{
		iface:   iface,
		index:   ident.index,
		mac:     mac,
		proto:   k.proto,
		owns:    func(vip netip.Addr) bool { return a.owns(iface, vip) },
		log:     a.log,
		metrics: a.metrics,
		grat:    a.cfg.Gratuitous,
	}
	return &responderEntry{h: a.start(a.runCtx, spec), ident: ident}
}

// logAndAnnounceLocked logs each VIP and interface pair that starts or stops
// being announced, and starts a gratuitous burst for the new ones and for
// those whose responder was just reopened.
func (a *Announcer) logAndAnnounceLocked(before, after map[netip.Addr][]string, reopened map[responderKey]bool) {
	vips := slices.SortedFunc(maps.Keys(before), netip.Addr.Compare)
	for _, vip := range vips {
		for _, name := range before[vip] {
			if slices.Contains(after[vip], name) {
				continue
			}
			reason := "interface no longer chosen"
			switch _, wanted := a.want[vip]; {
			case a.runCtx == nil:
				reason = "announcer stopped"
			case !wanted:
				reason = "VIP withdrawn"
			}
			a.log.Info("stopped announcing VIP", "vip", vip, "interface", name, "reason", reason)
		}
	}
	for _, vip := range slices.SortedFunc(maps.Keys(after), netip.Addr.Compare) {
		for _, name := range after[vip] {
			k := responderKey{iface: name, proto: protocolOf(vip)}
			isNew := !slices.Contains(before[vip], name)
			if !isNew && !reopened[k] {
				continue
			}
			if isNew {
				a.log.Info("started announcing VIP", "vip", vip, "interface", name, "protocol", k.proto)
			} else {
				a.log.Info("announcing VIP again on reopened interface", "vip", vip, "interface", name, "protocol", k.proto)
			}
			a.responders[k].h.announce(vip)
		}
	}
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
