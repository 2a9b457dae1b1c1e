package layer2

import (
	"net"
	"net/netip"
	"slices"
	"time"
)

// Asking who answers a VIP this node hands over. A releasing VIP is
// answered here until its new owner announces itself (see handover.go).
// But a new owner that was answering all along has no reason to announce:
// a node declared dead by mistake (starved of CPU, its member-list packets
// late) never stopped answering its VIPs. Another node took them over,
// hears it alive again and hands them back, while the owner saw nothing
// change. When the owner's claim was too young for the fence to act on
// the takeover's announcement (Config.FenceSettle), both nodes answered
// side by side until the owner's next periodic announcement (up to
// Config.Refresh) or the end of the release grace: 420 ms in CI, on a
// drain that starved the owner's speaker for more than a second.
//
// So when a VIP turns releasing while answered here, this node asks who
// answers for it: an ARP probe (sender address 0.0.0.0) or a neighbour
// solicitation, as the fence's verification does, at once and then at
// releaseAsks in case a frame was lost or the owner was late. Another
// host's answer shows that it answers the VIP already, and this node
// yields to it as to its announcement: make-before-break holds, the other
// host answered before this one stopped. A new owner that has not claimed
// the VIP yet does not answer, and the hand-over goes on as before, ended
// by its announcement. A host that lost the fence for the VIP is silent
// and does not answer either (see tellBeaten for how it is told).

// releaseAsks are when, after a VIP turns releasing, this node asks who
// answers for it: at once, then twice more within the default release
// grace (2 s). Each round asks only for the VIPs still released and
// answered here, so a node handing over thousands of VIPs asks once for
// each and then only for those whose new owner is slow.
var releaseAsks = []time.Duration{0, 250 * time.Millisecond, time.Second}

// askedVIP is a VIP this node asks about, with the releasing state it
// asks for: once that state is gone or yielded, it stops asking.
type askedVIP struct {
	vip netip.Addr
	s   *vipState
}

// askWhoAnswersLocked starts asking, one goroutine per responder, who
// answers each VIP that turned releasing and is still answered here.
func (a *Announcer) askWhoAnswersLocked(turned []turnedVIP) {
	o := a.owned.Load()
	asks := map[responderKey][]askedVIP{}
	for _, t := range turned {
		s := o.state(t.iface, t.vip)
		if s == nil || !s.releasing || !s.answering.Load() {
			continue
		}
		k := responderKey{t.iface, protocolOf(t.vip)}
		asks[k] = append(asks[k], askedVIP{t.vip, s})
	}
	for k, vips := range asks {
		if r := a.responderOf(k.iface, k.proto); r != nil {
			go a.ask(r, k.iface, vips)
		}
	}
}

// ask asks who answers for each VIP at each of releaseAsks (counted from
// when the responder's sockets are open), while it is still being
// released and answered on iface.
func (a *Announcer) ask(r *responder, iface string, vips []askedVIP) {
	if !r.awaitOpen() {
		return
	}
	start := time.Now()
	for _, at := range releaseAsks {
		if !wait(r.ctx, time.Until(start.Add(at)), nil) {
			return
		}
		o := a.owned.Load()
		vips = slices.DeleteFunc(vips, func(v askedVIP) bool {
			return o.state(iface, v.vip) != v.s || !v.s.answering.Load()
		})
		if len(vips) == 0 {
			return
		}
		for _, v := range vips {
			if err := r.p.solicit(v.vip); err != nil {
				a.log.Debug("cannot ask who answers for a VIP being handed over", "ip", v.vip, "interface", iface, "error", err)
			}
		}
	}
}

// answered handles another host's answer (by: its MAC, nil when unknown)
// to this node's question of who answers for vip on iface: for an owned
// VIP the fence's verification counts it (heardAt); a VIP being released
// here is yielded to that host, which answers it already.
func (a *Announcer) answered(iface string, vip netip.Addr, by net.HardwareAddr) {
	s := a.owned.Load().state(iface, vip)
	if s == nil || a.pauseHeard(iface, vip, by) {
		return
	}
	if !s.releasing {
		if len(by) != 6 || a.fromSpeaker(by) {
			s.markHeard() // a host that runs no speaker keeps no fence up
		}
		return
	}
	if len(by) == 6 {
		a.yield(iface, protocolOf(vip), vip, by)
	}
}
