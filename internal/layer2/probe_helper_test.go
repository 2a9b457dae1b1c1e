package layer2

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"golang.org/x/net/ipv6"
)

// Probes that tell their answers apart: each ARP request and each
// neighbour solicitation the client sends has a source address of its own
// among a few, so the answer (sent back to that address) names the probe.
// The IPv4 sources need not be configured on the client (the answers are
// raw frames it sniffs); the IPv6 ones must be, since the announcer's
// kernel resolves them to send its advertisement.
const (
	probeSources4 = 64
	probeSources6 = 32
)

func probeSource4(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{198, 51, 100, byte(128 + i%probeSources4)})
}

func probeSource6(i int) netip.Addr {
	return netip.MustParseAddr(fmt.Sprintf("2001:db8:1::1:%x", i%probeSources6))
}

// probeBoth sends, every interval, a broadcast ARP who-has for vip4 and a
// multicast NS for vip6, each from the next source, until the returned
// function is called (which waits for the senders to end).
func probeBoth(ctx context.Context, ifi *net.Interface, vip4, vip6 netip.Addr, interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { probeARPFrom(ctx, ifi, vip4, interval) })
	wg.Go(func() { probeNSFrom(ctx, ifi, vip6, interval) })
	return func() { cancel(); wg.Wait() }
}

func probeARPFrom(ctx context.Context, ifi *net.Interface, vip netip.Addr, interval time.Duration) {
	c, err := arp.Dial(ifi)
	if err != nil {
		return
	}
	defer c.Close()
	zero := net.HardwareAddr{0, 0, 0, 0, 0, 0}
	tick(ctx, interval, func(i int) {
		if p, err := arp.NewPacket(arp.OperationRequest, ifi.HardwareAddr, probeSource4(i), zero, vip); err == nil {
			_ = c.WriteTo(p, ethernet.Broadcast)
		}
	})
}

func probeNSFrom(ctx context.Context, ifi *net.Interface, vip netip.Addr, interval time.Duration) {
	c, _, err := ndp.Listen(ifi, ndp.Unspecified)
	if err != nil {
		return
	}
	defer c.Close()
	var none ipv6.ICMPFilter // read nothing: the sniffer sees the answers
	none.SetAll(true)
	_ = c.SetICMPFilter(&none)
	snm, err := ndp.SolicitedNodeMulticast(vip)
	if err != nil {
		return
	}
	ns := &ndp.NeighborSolicitation{
		TargetAddress: vip,
		Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: ifi.HardwareAddr}},
	}
	tick(ctx, interval, func(i int) {
		cm := &ipv6.ControlMessage{HopLimit: ndp.HopLimit, Src: probeSource6(i).AsSlice(), IfIndex: ifi.Index}
		_ = c.WriteTo(ns, cm, snm)
	})
}

// tick calls send(0), send(1), ... every interval until ctx ends.
func tick(ctx context.Context, interval time.Duration, send func(i int)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for i := 0; ; i++ {
		send(i)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
