package lab

import (
	"net"
	"net/netip"
	"sync/atomic"
	"time"
)

// Announcement is a gratuitous ARP or unsolicited neighbor advertisement
// seen on the segment.
type Announcement struct {
	At time.Time
	// Kind is "garp-request", "garp-reply" or "unsolicited-na".
	Kind string
	Addr netip.Addr
	MAC  net.HardwareAddr
	// Node owns MAC ("node2"...), or "".
	Node      string
	EthSource net.HardwareAddr
	// Dst is an NA's IPv6 destination (ff02::1 for an unsolicited one).
	Dst      netip.Addr
	Override bool
}

// GratuitousWatch records announcements on the segment.
type GratuitousWatch struct {
	lab    *Lab
	s      *stream
	closed atomic.Bool
}

// WatchGratuitous starts recording every gratuitous ARP and unsolicited
// NA on the segment (captured on the bridge itself, br0 in the bridge
// namespace, so no host's view is involved). It returns once capturing.
func (l *Lab) WatchGratuitous() (*GratuitousWatch, error) {
	s, err := l.startStream(Bridge, "gratuitous-watch", "watch", "-i", "br0")
	if err != nil {
		return nil, err
	}
	return &GratuitousWatch{lab: l, s: s}, nil
}

// Announcements recorded so far, in order.
func (w *GratuitousWatch) Announcements() Announcements {
	var out Announcements
	for _, line := range w.s.snapshot() {
		a := line.Announcement
		if a == nil {
			continue
		}
		mac, _ := net.ParseMAC(a.MAC)
		eth, _ := net.ParseMAC(a.EthSource)
		addr, _ := netip.ParseAddr(a.IP)
		dst, _ := netip.ParseAddr(a.Dst)
		out = append(out, Announcement{At: time.Unix(0, a.At), Kind: a.Kind, Addr: addr, MAC: mac,
			Node: w.lab.NodeOfMAC(mac), EthSource: eth, Dst: dst, Override: a.Override})
	}
	return out
}

// Stop ends the capture and returns every announcement.
func (w *GratuitousWatch) Stop() (Announcements, error) {
	if w.closed.Swap(true) {
		return w.Announcements(), nil
	}
	err := w.s.stop()
	return w.Announcements(), err
}

// Announcements in the order they were seen.
type Announcements []Announcement

// First returns the first announcement of addr (by node, when node is
// not "") at or after t.
func (as Announcements) First(addr netip.Addr, node string, after time.Time) (Announcement, bool) {
	for _, a := range as {
		if a.Addr == addr && (node == "" || a.Node == node) && !a.At.Before(after) {
			return a, true
		}
	}
	return Announcement{}, false
}

// For returns the announcements of addr.
func (as Announcements) For(addr netip.Addr) Announcements {
	var out Announcements
	for _, a := range as {
		if a.Addr == addr {
			out = append(out, a)
		}
	}
	return out
}
