package layer2

import "net/netip"

// ownership is an immutable snapshot of which VIPs are announced on which
// interface. Responders read the current snapshot for every packet, so a
// VIP stops being answered as soon as a new snapshot without it is stored.
type ownership map[string]map[netip.Addr]struct{}

func newOwnership(assigned map[netip.Addr][]string) ownership {
	o := ownership{}
	for vip, ifaces := range assigned {
		for _, name := range ifaces {
			if o[name] == nil {
				o[name] = map[netip.Addr]struct{}{}
			}
			o[name][vip] = struct{}{}
		}
	}
	return o
}

// owns reports whether vip is announced on the interface.
func (o ownership) owns(iface string, vip netip.Addr) bool {
	_, ok := o[iface][vip]
	return ok
}
