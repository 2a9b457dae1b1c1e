package layer2

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/mdlayher/ndp"
	"github.com/mdlayher/packet"
	"golang.org/x/net/ipv6"
)

// ndpProto answers neighbour solicitations for the VIPs announced on one
// interface. Multicast solicitations (address resolution) arrive on an
// ICMPv6 socket bound to the link-local address, once the solicited-node
// group of the VIP is joined; so do other hosts' unsolicited advertisements
// to all nodes (ff02::1), which end the hand-over of a releasing VIP.
// Unicast solicitations (neighbour unreachability detection, sent to the
// VIP itself) never reach that socket, because the VIP is not a local
// address; a packet socket with a BPF filter catches them.
type ndpProto struct {
	spec responderSpec
	conn *ndp.Conn
	addr netip.Addr // the link-local address conn is bound to
	raw  *packet.Conn
	mtu  int

	mu     sync.Mutex
	groups map[netip.Addr]int // solicited-node group -> VIPs needing it
	joined map[netip.Addr]bool
}

func newNDPProto(spec responderSpec) *ndpProto {
	return &ndpProto{spec: spec, groups: map[netip.Addr]int{}, joined: map[netip.Addr]bool{}}
}

func (p *ndpProto) open(ifi *net.Interface) error {
	conn, addr, err := ndp.Listen(ifi, ndp.LinkLocal)
	if err != nil {
		return fmt.Errorf("open NDP socket: %w", err)
	}
	// Solicitations to answer, and advertisements: another host's
	// unsolicited NA (to ff02::1) for a VIP being released ends its
	// hand-over. The hop limit tells an NA from the link from a forged one.
	var f ipv6.ICMPFilter
	f.SetAll(true)
	f.Accept(ipv6.ICMPTypeNeighborSolicitation)
	f.Accept(ipv6.ICMPTypeNeighborAdvertisement)
	if err := conn.SetICMPFilter(&f); err != nil {
		_ = conn.Close()
		return fmt.Errorf("set ICMPv6 filter: %w", err)
	}
	if err := conn.SetControlMessage(ipv6.FlagHopLimit, true); err != nil {
		_ = conn.Close()
		return fmt.Errorf("ask for the hop limit of NDP messages: %w", err)
	}
	// A socket bound to the link-local address gets multicast sent to
	// groups it did not join only while IPV6_MULTICAST_ALL is on (the
	// default); joining all-nodes makes the unsolicited NAs independent
	// of that.
	if err := conn.JoinGroup(netip.IPv6LinkLocalAllNodes()); err != nil {
		_ = conn.Close()
		return fmt.Errorf("join the all-nodes group: %w", err)
	}
	prog, err := nsFilter()
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("assemble NS filter: %w", err)
	}
	raw, err := packet.Listen(ifi, packet.Raw, etherTypeIPv6, &packet.Config{Filter: prog})
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("open packet socket for unicast NS: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conn, p.addr, p.raw, p.mtu = conn, addr, raw, max(ifi.MTU, 1280)
	p.syncGroupsLocked()
	return nil
}

func (p *ndpProto) close() {
	// Closing ends the pending reads and drops the group memberships.
	_ = p.conn.Close()
	_ = p.raw.Close()
}

// setVIPs joins the solicited-node group of each VIP and leaves the groups
// no VIP needs any more. VIPs sharing their low 24 bits share a group.
func (p *ndpProto) setVIPs(vips []netip.Addr) {
	groups := map[netip.Addr]int{}
	for _, vip := range vips {
		if g, err := ndp.SolicitedNodeMulticast(vip); err == nil {
			groups[g]++
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.groups = groups
	if p.conn != nil {
		p.syncGroupsLocked()
	}
}

func (p *ndpProto) syncGroupsLocked() {
	for _, g := range slices.SortedFunc(maps.Keys(p.groups), netip.Addr.Compare) {
		if p.joined[g] {
			continue
		}
		if err := p.conn.JoinGroup(g); err != nil {
			p.spec.log.Warn("joining solicited-node group failed", "group", g, "error", err)
			continue
		}
		p.joined[g] = true
		p.spec.log.Debug("joined solicited-node group", "group", g)
	}
	for _, g := range slices.SortedFunc(maps.Keys(p.joined), netip.Addr.Compare) {
		if p.groups[g] > 0 {
			continue
		}
		delete(p.joined, g)
		if err := p.conn.LeaveGroup(g); err != nil {
			p.spec.log.Warn("leaving solicited-node group failed", "group", g, "error", err)
			continue
		}
		p.spec.log.Debug("left solicited-node group", "group", g)
	}
}

func (p *ndpProto) serve(ctx context.Context, wg *sync.WaitGroup) {
	wg.Go(func() { p.multicastLoop(ctx) })
	wg.Go(func() { p.unicastLoop(ctx) })
}

// multicastLoop reads the ICMPv6 socket with ReadRaw and parses each
// message itself: ndp.Conn.ReadFrom returns some parse errors like socket
// errors, and only a failing socket may pause the loop.
func (p *ndpProto) multicastLoop(ctx context.Context) {
	bo := newBackoff(10*time.Millisecond, time.Second)
	buf := make([]byte, p.mtu)
	for {
		n, cm, from, err := p.conn.ReadRaw(buf)
		if err != nil {
			if !readFailed(ctx, p.spec.log, bo, err) {
				return
			}
			continue
		}
		bo.reset()
		if from == p.addr {
			continue // our own message
		}
		m, err := ndp.ParseMessage(buf[:n])
		if err != nil {
			p.spec.countMalformed(err)
			continue
		}
		p.handleMulticast(ctx, m, cm, from)
	}
}

func (p *ndpProto) handleMulticast(ctx context.Context, m ndp.Message, cm *ipv6.ControlMessage, from netip.Addr) {
	switch m := m.(type) {
	case *ndp.NeighborSolicitation:
		if p.spec.owns(m.TargetAddress) {
			p.answer(ctx, m.TargetAddress, from, "multicast")
		}
	case *ndp.NeighborAdvertisement:
		if cm == nil || cm.HopLimit != ndp.HopLimit {
			return
		}
		if vip, by, ok := naTakeover(m, nil, p.spec.mac, p.spec.announces); ok {
			p.spec.yield(vip, by)
		} else if vip, ok := naAnswer(m, p.spec.mac); ok && p.spec.heard != nil {
			p.spec.heard(vip)
		}
	}
}

func (p *ndpProto) unicastLoop(ctx context.Context) {
	bo := newBackoff(10*time.Millisecond, time.Second)
	buf := make([]byte, p.mtu+ethHeaderLen)
	for {
		n, _, err := p.raw.ReadFrom(buf)
		if err != nil {
			if !readFailed(ctx, p.spec.log, bo, err) {
				return
			}
			continue
		}
		bo.reset()
		f, err := parseNSFrame(buf[:n])
		if err != nil {
			p.spec.countMalformed(err)
			continue
		}
		if vip, ok := unicastNSFor(f, p.spec.mac, p.spec.owns); ok {
			p.answer(ctx, vip, f.src, "unicast")
		}
	}
}

// answer sends a solicited NA for vip to the soliciting address, or to all
// nodes when the solicitation came from the unspecified address (DAD).
func (p *ndpProto) answer(ctx context.Context, vip, from netip.Addr, kind string) {
	p.spec.metrics.requests.WithLabelValues(p.spec.iface, protoNDP).Inc()
	dst, solicited := from, true
	if !from.IsValid() || from.IsUnspecified() {
		dst, solicited = netip.IPv6LinkLocalAllNodes(), false
	}
	sent, err := p.spec.sendAnswer(vip, func() error { return p.conn.WriteTo(p.advertisement(vip, solicited), nil, dst) })
	if err != nil {
		p.spec.log.Warn("sending neighbor advertisement failed", "vip", vip, "to", dst, "error", err)
		return
	}
	if !sent {
		return
	}
	if p.spec.log.Enabled(ctx, slog.LevelDebug) {
		p.spec.log.Debug("answered neighbor solicitation", "vip", vip, "from", from, "kind", kind)
	}
}

// solicit sends a neighbour solicitation for vip from the link-local
// address to its solicited-node group: the owner answers with a solicited
// NA to that address.
func (p *ndpProto) solicit(vip netip.Addr) error {
	group, err := ndp.SolicitedNodeMulticast(vip)
	if err != nil {
		return fmt.Errorf("neighbour solicitation for %s: %w", vip, err)
	}
	ns := &ndp.NeighborSolicitation{TargetAddress: vip,
		Options: []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: p.spec.mac}}}
	if err := p.conn.WriteTo(ns, nil, group); err != nil {
		return fmt.Errorf("neighbour solicitation for %s: %w", vip, err)
	}
	return nil
}

// naAnswer decides whether na is another host's solicited advertisement
// (an answer to solicit), and for which address: its target link-layer
// address, when it has one, is not ours.
func naAnswer(na *ndp.NeighborAdvertisement, ourMAC net.HardwareAddr) (netip.Addr, bool) {
	if na == nil || !na.Solicited {
		return netip.Addr{}, false
	}
	vip := na.TargetAddress.WithZone("")
	if !vip.Is6() || vip.IsMulticast() || vip.IsUnspecified() {
		return netip.Addr{}, false
	}
	for _, o := range na.Options {
		if lla, ok := o.(*ndp.LinkLayerAddress); ok && lla.Direction == ndp.Target && !isOtherHost(lla.Addr, ourMAC) {
			return netip.Addr{}, false
		}
	}
	return vip, true
}

// gratuitous sends an unsolicited NA with the override flag to all nodes.
func (p *ndpProto) gratuitous(vip netip.Addr) error {
	if err := p.conn.WriteTo(p.advertisement(vip, false), nil, netip.IPv6LinkLocalAllNodes()); err != nil {
		return fmt.Errorf("unsolicited NA for %s: %w", vip, err)
	}
	return nil
}

func (p *ndpProto) advertisement(vip netip.Addr, solicited bool) *ndp.NeighborAdvertisement {
	return &ndp.NeighborAdvertisement{
		Solicited:     solicited,
		Override:      true,
		TargetAddress: vip,
		Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: p.spec.mac}},
	}
}
