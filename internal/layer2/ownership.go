package layer2

import (
	"net/netip"
	"sync/atomic"
)

// ownership is an immutable snapshot of which VIPs are announced on which
// interface. Responders read the current snapshot for every packet, so a
// VIP stops being answered as soon as a new snapshot without it is stored.
//
// A VIP owned outright maps to nil. A VIP being handed over to another node
// (Announcement.Releasing) maps to its handover, whose yielded flag the
// packet path sets when the new owner announces itself: from then on the
// VIP is not answered on that interface, with no new snapshot needed.
type ownership map[string]map[netip.Addr]*handover

// handover is the state of a releasing VIP on one interface. It outlives
// snapshots: the announcer keeps it while the VIP stays Releasing.
type handover struct {
	yielded atomic.Bool
}

// handoverKey names a releasing VIP on one interface.
type handoverKey struct {
	vip   netip.Addr
	iface string
}

func newOwnership(assigned map[netip.Addr][]string, handovers map[handoverKey]*handover) ownership {
	o := ownership{}
	for vip, ifaces := range assigned {
		for _, name := range ifaces {
			if o[name] == nil {
				o[name] = map[netip.Addr]*handover{}
			}
			o[name][vip] = handovers[handoverKey{vip, name}]
		}
	}
	return o
}

// owns reports whether vip is answered on the interface: owned, or
// releasing and not yet taken over.
func (o ownership) owns(iface string, vip netip.Addr) bool {
	h, ok := o[iface][vip]
	return ok && (h == nil || !h.yielded.Load())
}

// advertises reports whether gratuitous announcements may be sent for vip
// on the interface: it is owned and not being handed over.
func (o ownership) advertises(iface string, vip netip.Addr) bool {
	h, ok := o[iface][vip]
	return ok && h == nil
}

// releasing returns the handover of vip on the interface while it is being
// handed over and still answered, or nil.
func (o ownership) releasing(iface string, vip netip.Addr) *handover {
	if h := o[iface][vip]; h != nil && !h.yielded.Load() {
		return h
	}
	return nil
}

// yielded reports whether vip was taken over on the interface.
func (o ownership) yielded(iface string, vip netip.Addr) bool {
	h := o[iface][vip]
	return h != nil && h.yielded.Load()
}
