package layer2

import (
	"context"
	"fmt"
	"io"
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

	"github.com/herald-lb/herald/internal/pktstamp"
)

// ndpProto answers neighbour solicitations for the VIPs announced on one
// interface. Solicitations, multicast (address resolution, to the VIP's
// solicited-node group) and unicast (neighbour unreachability detection,
// to the VIP itself, which the kernel never hands to an ICMPv6 socket
// because the VIP is not a local address), and other hosts'
// advertisements (unsolicited ones to all nodes end the hand-over of a
// releasing VIP; solicited ones answer solicit) are read from one packet
// socket with a BPF filter, in the order the interface received them and
// with the time the kernel received each, so that NDP answer delays are
// measured as ARP's are. An ICMPv6 socket bound to the link-local address
// sends the answers and announcements and joins each VIP's solicited-node
// group (so that the interface accepts those frames); it reads nothing.
type ndpProto struct {
	spec   responderSpec
	conn   ndpConn
	addr   netip.Addr // the link-local address conn is bound to
	raw    frameWriter
	frames frameReader // raw, with receive times
	mtu    int

	mu     sync.Mutex
	groups map[netip.Addr]int // solicited-node group -> VIPs needing it
	joined map[netip.Addr]bool
}

// ndpConn sends NDP messages and holds group memberships (*ndp.Conn).
type ndpConn interface {
	WriteTo(m ndp.Message, cm *ipv6.ControlMessage, dst netip.Addr) error
	JoinGroup(group netip.Addr) error
	LeaveGroup(group netip.Addr) error
	Close() error
}

// frameWriter sends and closes the packet socket (*packet.Conn).
type frameWriter interface {
	WriteTo(b []byte, addr net.Addr) (int, error)
	io.Closer
}

func newNDPProto(spec responderSpec) *ndpProto {
	return &ndpProto{spec: spec, groups: map[netip.Addr]int{}, joined: map[netip.Addr]bool{}}
}

func (p *ndpProto) open(ifi *net.Interface) error {
	conn, addr, err := ndp.Listen(ifi, ndp.LinkLocal)
	if err != nil {
		return fmt.Errorf("open NDP socket: %w", err)
	}
	// The socket only sends: everything it could read comes from the
	// packet socket.
	var f ipv6.ICMPFilter
	f.SetAll(true)
	if err := conn.SetICMPFilter(&f); err != nil {
		_ = conn.Close()
		return fmt.Errorf("set ICMPv6 filter: %w", err)
	}
	prog, err := ndpFilter()
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("assemble NDP filter: %w", err)
	}
	raw, err := packet.Listen(ifi, packet.Raw, etherTypeIPv6, &packet.Config{Filter: prog})
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("open packet socket for NDP: %w", err)
	}
	frames, err := pktstamp.NewReader(raw)
	if err != nil {
		_ = conn.Close()
		_ = raw.Close()
		return fmt.Errorf("open packet socket for NDP: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conn, p.addr, p.raw, p.frames, p.mtu = conn, addr, raw, frames, max(ifi.MTU, 1280)
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
	wg.Go(func() { p.readLoop(ctx) })
}

func (p *ndpProto) readLoop(ctx context.Context) {
	bo := newBackoff(10*time.Millisecond, time.Second)
	buf := make([]byte, p.mtu+ethHeaderLen)
	for {
		if err := p.readOne(ctx, buf); err != nil {
			if !p.spec.readFailed(ctx, bo, err) {
				return
			}
			continue
		}
		p.spec.socketWorked(opKindRead)
		bo.reset()
	}
}

// readOne reads one frame from the packet socket and handles it. It
// returns only the socket's errors: a frame that does not parse is counted
// (herald_l2_malformed_frames_total) and skipped.
func (p *ndpProto) readOne(ctx context.Context, buf []byte) error {
	n, received, err := p.frames.Read(buf)
	if err != nil {
		return err
	}
	p.handle(ctx, buf[:n], received)
	return nil
}

// handle decides what to do with one frame, received by the kernel at
// received: another host's unsolicited advertisement yields a releasing
// VIP, its solicited one records that it answered (solicit), and a
// solicitation for an owned VIP is answered.
func (p *ndpProto) handle(ctx context.Context, b []byte, received time.Time) {
	p.spec.checkAwake()
	f, err := parseNDPFrame(b)
	if err != nil {
		p.spec.countMalformed(err)
		return
	}
	if f.na != nil {
		if vip, by, ok := naTakeover(f.na, f.srcMAC, p.spec.mac, p.spec.announces); ok {
			if f.toUs(p.spec.mac) {
				p.spec.notice(vip, by)
			} else {
				p.spec.yield(vip, by)
			}
		} else if vip, by, ok := naAnswer(f.na, f.srcMAC, p.spec.mac); ok && p.spec.heard != nil {
			p.spec.heard(vip, by)
		}
		return
	}
	if vip, ok := nsGaveUp(f, p.spec.mac); ok {
		if p.spec.gaveUp != nil {
			p.spec.gaveUp(vip, f.srcMAC)
		}
		return
	}
	if f.ns != nil && isOtherHost(f.srcMAC, p.spec.mac) && p.spec.asked != nil {
		p.spec.asked(f.ns.TargetAddress.WithZone(""), f.srcMAC)
	}
	if vip, kind, ok := nsFor(f, p.spec.mac, p.spec.owns); ok {
		p.answer(ctx, vip, f.src, kind, received)
	}
}

// answer sends a solicited NA for vip to the soliciting address, or to all
// nodes when the solicitation came from the unspecified address (DAD); the
// kernel received the solicitation at received.
func (p *ndpProto) answer(ctx context.Context, vip, from netip.Addr, kind string, received time.Time) {
	p.spec.metrics.requests.WithLabelValues(p.spec.iface, protoNDP).Inc()
	dst, solicited := from, true
	if !from.IsValid() || from.IsUnspecified() {
		dst, solicited = netip.IPv6LinkLocalAllNodes(), false
	}
	sent, err := p.spec.sendAnswer(vip, received, func() error { return p.conn.WriteTo(p.advertisement(vip, solicited), nil, dst) })
	if err != nil {
		p.spec.log.Warn("sending neighbor advertisement failed", "ip", vip, "to", dst, "error", err)
		return
	}
	if !sent {
		return
	}
	p.spec.delays.answered(vip, received)
	if p.spec.log.Enabled(ctx, slog.LevelDebug) {
		p.spec.log.Debug("answered neighbor solicitation", "ip", vip, "from", from, "kind", kind)
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

// giveUp sends a neighbour solicitation for vip from the unspecified
// address (as for DAD) to vip's solicited-node group, in a frame to the MAC
// to alone: this node gave vip up (see tellBeaten).
func (p *ndpProto) giveUp(vip netip.Addr, to net.HardwareAddr) error {
	group, err := ndp.SolicitedNodeMulticast(vip)
	if err != nil {
		return fmt.Errorf("neighbour solicitation for %s to %s: %w", vip, to, err)
	}
	if err := p.writeFrame(to, netip.IPv6Unspecified(), group, &ndp.NeighborSolicitation{TargetAddress: vip}); err != nil {
		return fmt.Errorf("neighbour solicitation for %s to %s: %w", vip, to, err)
	}
	return nil
}

// naAnswer decides whether na is another host's solicited advertisement
// (an answer to solicit), and returns the address it answers for and the
// answering host's MAC: its target link-layer address or, without one,
// srcMAC (the frame's source, nil when unknown). Neither may be ours.
func naAnswer(na *ndp.NeighborAdvertisement, srcMAC, ourMAC net.HardwareAddr) (netip.Addr, net.HardwareAddr, bool) {
	if na == nil || !na.Solicited {
		return netip.Addr{}, nil, false
	}
	vip := na.TargetAddress.WithZone("")
	if !vip.Is6() || vip.IsMulticast() || vip.IsUnspecified() {
		return netip.Addr{}, nil, false
	}
	by := srcMAC
	for _, o := range na.Options {
		if lla, ok := o.(*ndp.LinkLayerAddress); ok && lla.Direction == ndp.Target {
			by = lla.Addr
			break
		}
	}
	if by != nil && !isOtherHost(by, ourMAC) {
		return netip.Addr{}, nil, false
	}
	return vip, slices.Clone(by), true
}

// gratuitous sends an unsolicited NA with the override flag to all nodes.
func (p *ndpProto) gratuitous(vip netip.Addr) error {
	if err := p.conn.WriteTo(p.advertisement(vip, false), nil, netip.IPv6LinkLocalAllNodes()); err != nil {
		return fmt.Errorf("unsolicited NA for %s: %w", vip, err)
	}
	return nil
}

// notify sends an unsolicited NA for vip to all nodes, in a frame to the
// MAC to alone: no other host's kernel reads a frame sent to another MAC,
// even when a switch floods it.
func (p *ndpProto) notify(vip netip.Addr, to net.HardwareAddr) error {
	if err := p.writeFrame(to, p.addr.WithZone(""), netip.IPv6LinkLocalAllNodes(), p.advertisement(vip, false)); err != nil {
		return fmt.Errorf("unsolicited NA for %s to %s: %w", vip, to, err)
	}
	return nil
}

// writeFrame sends m from src to dst in an Ethernet frame to the MAC to
// alone, through the packet socket.
func (p *ndpProto) writeFrame(to net.HardwareAddr, src, dst netip.Addr, m ndp.Message) error {
	b, err := marshalNDPFrame(p.spec.mac, to, src, dst, m)
	if err != nil {
		return err
	}
	_, err = p.raw.WriteTo(b, &packet.Addr{HardwareAddr: to})
	return err
}

func (p *ndpProto) advertisement(vip netip.Addr, solicited bool) *ndp.NeighborAdvertisement {
	return &ndp.NeighborAdvertisement{
		Solicited:     solicited,
		Override:      true,
		TargetAddress: vip,
		Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: p.spec.mac}},
	}
}
