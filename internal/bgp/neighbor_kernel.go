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
// Solicitation on an interface with no neighbour (RFC 4861's interval).
const solicitEvery = 4 * time.Second

// kernelNeighborFinder finds an interface's IPv6 link-local neighbour in
// the kernel's neighbour table. The node learns the router there from
// its Router Advertisements (the kernel records their source even where
// it does not accept them for routes); while there is none, it sends a
// Router Solicitation so that the router answers now rather than at its
// next periodic advertisement.
func kernelNeighborFinder(log *slog.Logger) func(string) (netip.Addr, error) {
	var mu sync.Mutex
	lastSolicit := map[string]time.Time{}
	return func(iface string) (netip.Addr, error) {
		a, err := kernelNeighbor(iface)
		if !errors.Is(err, ErrNoNeighbor) {
			return a, err
		}
		mu.Lock()
		due := time.Since(lastSolicit[iface]) >= solicitEvery
		if due {
			lastSolicit[iface] = time.Now()
		}
		mu.Unlock()
		if due {
			if serr := solicitRouter(iface); serr != nil {
				log.Debug("router solicitation", "interface", iface, "err", serr)
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

// solicitRouter sends one Router Solicitation on iface to all routers.
func solicitRouter(iface string) error {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return err
	}
	c, _, err := ndp.Listen(ifi, ndp.LinkLocal)
	if err != nil {
		return err
	}
	defer c.Close()
	rs := &ndp.RouterSolicitation{}
	if len(ifi.HardwareAddr) > 0 {
		rs.Options = []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: ifi.HardwareAddr}}
	}
	return c.WriteTo(rs, nil, netip.IPv6LinkLocalAllRouters())
}
