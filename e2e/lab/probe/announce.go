package probe

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"github.com/mdlayher/packet"
)

// Announce sends one gratuitous ARP request (IPv4: sender and target IP
// are addr) or one unsolicited neighbor advertisement with the Override
// flag to ff02::1 (IPv6, from the interface's link-local address) that
// claims addr for ifname's MAC: what a speaker sends when it takes a VIP
// over. It is the lab's stand-in for a speaker in tests of the observers.
func Announce(ifname string, addr netip.Addr) error {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return fmt.Errorf("interface %s: %w", ifname, err)
	}
	var frame []byte
	proto := ethPARP
	if addr.Is4() {
		frame, err = garpFrame(ifi.HardwareAddr, addr)
	} else {
		proto = ethPIPv6
		frame, err = unsolicitedNA(ifi, addr)
	}
	if err != nil {
		return err
	}
	conn, err := packet.Listen(ifi, packet.Raw, proto, nil)
	if err != nil {
		return fmt.Errorf("raw socket on %s: %w", ifname, err)
	}
	defer conn.Close()
	if _, err := conn.WriteTo(frame, &packet.Addr{HardwareAddr: net.HardwareAddr(frame[0:6])}); err != nil {
		return fmt.Errorf("announcing %v on %s: %w", addr, ifname, err)
	}
	return nil
}

func garpFrame(mac net.HardwareAddr, addr netip.Addr) ([]byte, error) {
	p, err := arp.NewPacket(arp.OperationRequest, mac, addr, ethernet.Broadcast, addr)
	if err != nil {
		return nil, err
	}
	payload, err := p.MarshalBinary()
	if err != nil {
		return nil, err
	}
	f := ethernet.Frame{Destination: ethernet.Broadcast, Source: mac, EtherType: ethernet.EtherTypeARP, Payload: payload}
	return f.MarshalBinary()
}

func unsolicitedNA(ifi *net.Interface, addr netip.Addr) ([]byte, error) {
	src, err := linkLocalOf(ifi)
	if err != nil {
		return nil, err
	}
	allNodes := netip.MustParseAddr("ff02::1")
	m := &ndp.NeighborAdvertisement{
		Override: true, TargetAddress: addr,
		Options: []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: ifi.HardwareAddr}},
	}
	return icmpFrame(m, ifi.HardwareAddr, multicastMAC(allNodes), src, allNodes)
}

func linkLocalOf(ifi *net.Interface) (netip.Addr, error) {
	addrs, err := ifi.Addrs()
	if err != nil {
		return netip.Addr{}, err
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().IsLinkLocalUnicast() {
			return p.Addr(), nil
		}
	}
	return netip.Addr{}, fmt.Errorf("%s has no IPv6 link-local address", ifi.Name)
}
