package layer2

import (
	"net"
	"net/netip"
	"time"
)

// What the tests read of a VIP's machine.

// beatenHost is the MAC of the last host this node won the fence against
// for the VIP, nil when there is none.
func (s *vipState) beatenHost() net.HardwareAddr {
	s.own.mu.Lock()
	defer s.own.mu.Unlock()
	return mac(s.own.m.Beaten())
}

// fenced reports whether the VIP is silent for another host (a lost fence
// or a deferral) at now.
func (s *vipState) fenced(now time.Time) bool {
	s.own.mu.Lock()
	defer s.own.mu.Unlock()
	return s.own.m.Watching(now) && s.quiet(now)
}

// fenceWinner is the MAC of the host the VIP is silent for at now, nil
// when none.
func (s *vipState) fenceWinner(now time.Time) net.HardwareAddr {
	s.own.mu.Lock()
	defer s.own.mu.Unlock()
	if !s.own.m.Watching(now) {
		return nil
	}
	return mac(s.own.m.By())
}

// heard reports whether another speaker was heard answering or
// announcing the VIP.
func (s *vipState) heard() bool {
	s.own.mu.Lock()
	defer s.own.mu.Unlock()
	return !s.own.m.HeardAt().IsZero()
}

// yield feeds the machine of a VIP being released on iface another
// host's announcement, and reports whether it yielded to it (false for a
// VIP not released and answered there, which is left alone).
func (a *Announcer) yield(iface, proto string, vip netip.Addr, by net.HardwareAddr) bool {
	s := a.owned.Load().state(iface, vip)
	if s == nil || !s.releasing || !s.answering.Load() {
		return false
	}
	a.foreignAnnouncement(iface, proto, vip, nil, by)
	return !s.answering.Load()
}
