package layer2

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/herald-lb/herald/internal/l2owner"
)

// The split-brain fence, socket side. Two nodes can both believe they own
// a VIP: the member-list port blocked between them while the LAN works,
// or two members that disagree for a moment. Each owner refreshes its
// VIPs with a gratuitous packet every Config.Refresh (refreshLoop), so
// each hears the other; the VIP's machine decides who stops
// (internal/l2owner: Wins, the fenced phase and its verification), and
// this file sends what it asks for.

// FenceWins says whether the host with MAC ours keeps vip when the host
// with MAC theirs announces it too (both speakers): l2owner.Wins. Tests
// use it to pick a MAC that outranks a speaker's.
func FenceWins(vip netip.Addr, ours, theirs net.HardwareAddr) bool {
	return l2owner.Wins(vip, ours, theirs)
}

// tellWinner sends the fence's winner (MAC by), and it alone, one
// announcement of vip: a loser that heard the winner first announces
// nothing more, so without it the winner would never learn of the conflict
// (no count, no event on its side) when the loser's own announcements did
// not reach it first, as in a partition where the winner refreshes first.
// The frame goes to the winner's MAC, which no other host's kernel reads,
// so no client moves to the loser.
func (a *Announcer) tellWinner(iface, proto string, vip netip.Addr, by net.HardwareAddr) {
	r := a.responderOf(iface, proto)
	if r == nil {
		return
	}
	to := slices.Clone(by)
	go func() {
		if !r.awaitOpen() {
			return
		}
		if err := r.p.notify(vip, to); err != nil {
			a.log.Warn("cannot tell the fence's winner of the conflict", "ip", vip, "interface", iface, "protocol", proto, "winner", to.String(), "error", err)
		}
	}()
}

// responderOf returns the running responder of a protocol on an
// interface, nil when there is none (or it is not a real one).
func (a *Announcer) responderOf(iface, proto string) *responder {
	running := a.running.Load()
	if running == nil {
		return nil
	}
	return (*running)[responderKey{iface, proto}]
}

// reassert sends one gratuitous packet for vip on iface now.
func (a *Announcer) reassert(iface, proto string, vip netip.Addr) {
	if r := a.responderOf(iface, proto); r != nil {
		go func() {
			if r.awaitOpen() {
				_, _ = r.sendGratuitous(r.ctx, vip)
			}
		}()
	}
}

// refreshLoop sends one gratuitous packet for every VIP announced on the
// responder's interface every Refresh, so that two owners hear each other
// and clients' stale caches heal.
func (r *responder) refreshLoop() {
	if r.spec.refresh <= 0 || !r.awaitOpen() {
		return
	}
	t := time.NewTicker(r.spec.refresh)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
		}
		for _, vip := range r.spec.vips() {
			if _, err := r.sendGratuitous(context.Background(), vip); err != nil {
				r.log.Debug("refresh announcement failed", "ip", vip, "error", err)
			}
		}
	}
}
