package bgp

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/mdlayher/ndp"
	"github.com/vishvananda/netlink"
)

// solicitEvery bounds how often the kernel finder sends a Router
// Solicitation on an interface with no neighbour (RFC 4861's interval);
// advertiseEvery is how often it sends a Router Advertisement (RFC
// 4861's floor, as FRR's own interval on a fabric link may be).
const (
	solicitEvery   = 4 * time.Second
	advertiseEvery = 3 * time.Second
)

// kernelNeighborFinder finds an interface's IPv6 link-local neighbour in
// the kernel's neighbour table. The node learns the router there from
// its Router Advertisements (the kernel records their source even where
// it does not accept them for routes); while there is none, it sends a
// Router Solicitation so that the router answers now rather than at its
// next periodic advertisement.
//
// The router learns the node the same way: FRR accepts an unnumbered
// session only from a neighbour it has heard a Router Advertisement from
// (as from FRR on the other end of a fabric link). So every
// advertiseEvery the finder also sends one on each interface it is
// asked about, with a router lifetime of 0: the node offers no route,
// and no host takes it for a default router.
func kernelNeighborFinder(log *slog.Logger) func(string) (netip.Addr, error) {
	var mu sync.Mutex
	last := map[string]time.Time{} // "rs "/"ra " + interface
	due := func(key string, every time.Duration) bool {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last[key]) < every {
			return false
		}
		last[key] = time.Now()
		return true
	}
	return func(iface string) (netip.Addr, error) {
		a, err := kernelNeighbor(iface)
		if errors.Is(err, ErrNoInterface) {
			return a, err
		}
		if due("ra "+iface, advertiseEvery) {
			if serr := sendND(iface, advertisement, netip.IPv6LinkLocalAllNodes()); serr != nil {
				log.Debug("router advertisement", "interface", iface, "error", serr)
			}
		}
		if errors.Is(err, ErrNoNeighbor) && due("rs "+iface, solicitEvery) {
			if serr := sendND(iface, solicitation, netip.IPv6LinkLocalAllRouters()); serr != nil {
				log.Debug("router solicitation", "interface", iface, "error", serr)
			}
		}
		return a, err
	}
}

func kernelNeighbor(iface string) (netip.Addr, error) {
	link, err := netlink.LinkByName(iface)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return netip.Addr{}, fmt.Errorf("interface %s: %w", iface, ErrNoInterface)
		}
		return netip.Addr{}, fmt.Errorf("interface %s: %w", iface, err)
	}
	addrs, err := netlink.AddrList(link, netlink.FAMILY_V6)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("interface %s: list addresses: %w", iface, err)
	}
	var own []netip.Addr
	hasLL := false
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			own = append(own, ip)
			hasLL = hasLL || ip.IsLinkLocalUnicast()
		}
	}
	if !hasLL {
		return netip.Addr{}, fmt.Errorf("interface %s has no IPv6 link-local address (down, or IPv6 disabled on it)", iface)
	}
	neighs, err := netlink.NeighList(link.Attrs().Index, netlink.FAMILY_V6)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("interface %s: list neighbours: %w", iface, err)
	}
	var ns []linkNeighbor
	for _, n := range neighs {
		if ip, ok := netip.AddrFromSlice(n.IP); ok {
			ns = append(ns, linkNeighbor{addr: ip, usable: n.State&(netlink.NUD_FAILED|netlink.NUD_INCOMPLETE) == 0})
		}
	}
	return pickNeighbor(iface, ns, own)
}

// advertisement is a Router Advertisement that offers no route (router
// lifetime 0, no prefix), with the interface's link-layer address.
func advertisement(src ndp.Option) ndp.Message {
	ra := &ndp.RouterAdvertisement{}
	if src != nil {
		ra.Options = []ndp.Option{src}
	}
	return ra
}

// solicitation is a Router Solicitation with the interface's
// link-layer address.
func solicitation(src ndp.Option) ndp.Message {
	rs := &ndp.RouterSolicitation{}
	if src != nil {
		rs.Options = []ndp.Option{src}
	}
	return rs
}

// sendND sends one NDP message built by msg on iface to dst, from the
// interface's link-local address.
func sendND(iface string, msg func(ndp.Option) ndp.Message, dst netip.Addr) error {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return err
	}
	c, _, err := ndp.Listen(ifi, ndp.LinkLocal)
	if err != nil {
		return err
	}
	defer c.Close()
	var src ndp.Option
	if len(ifi.HardwareAddr) > 0 {
		src = &ndp.LinkLayerAddress{Direction: ndp.Source, Addr: ifi.HardwareAddr}
	}
	return c.WriteTo(msg(src), nil, dst)
}
