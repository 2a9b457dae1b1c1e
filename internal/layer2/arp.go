package layer2

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"

	"github.com/herald-lb/herald/internal/pktstamp"
)

// arpProto answers ARP requests for the VIPs announced on one interface.
// It reads the packet socket itself rather than through arp.Client.Read,
// which returns a malformed frame's parse error like a socket error: here a
// frame that does not parse is counted and skipped, and only a failing
// socket pauses the loop.
type arpProto struct {
	spec   responderSpec
	conn   io.Closer
	frames frameReader
	client arpSender
}

// frameReader reads one frame with the time the kernel received it
// (*pktstamp.Reader).
type frameReader interface {
	Read(b []byte) (n int, received time.Time, err error)
}

// arpSender sends ARP packets (*arp.Client).
type arpSender interface {
	Reply(req *arp.Packet, hwAddr net.HardwareAddr, ip netip.Addr) error
	WriteTo(p *arp.Packet, addr net.HardwareAddr) error
}

// arpReadBuffer holds any ARP frame over Ethernet (42 bytes, 60 padded);
// a longer frame is truncated to it, which parses the same.
const arpReadBuffer = 256

func newARPProto(spec responderSpec) *arpProto { return &arpProto{spec: spec} }

func (p *arpProto) open(ifi *net.Interface) error {
	conn, err := packet.Listen(ifi, packet.Raw, int(ethernet.EtherTypeARP), nil)
	if err != nil {
		return fmt.Errorf("open ARP socket: %w", err)
	}
	rd, err := pktstamp.NewReader(conn)
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("open ARP socket: %w", err)
	}
	c, err := arp.New(ifi, conn)
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("open ARP socket: %w", err)
	}
	p.conn, p.frames, p.client = conn, rd, c
	return nil
}

func (p *arpProto) close() {
	// Close also ends the pending Read; its error is reported there.
	_ = p.conn.Close()
}

func (p *arpProto) setVIPs([]netip.Addr) {}

func (p *arpProto) serve(ctx context.Context, wg *sync.WaitGroup) {
	wg.Go(func() { p.readLoop(ctx) })
}

func (p *arpProto) readLoop(ctx context.Context) {
	bo := newBackoff(10*time.Millisecond, time.Second)
	buf := make([]byte, arpReadBuffer)
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

// readOne reads one frame and handles it. It returns only the socket's
// errors: a frame that does not parse is counted
// (herald_l2_malformed_frames_total) and skipped.
func (p *arpProto) readOne(ctx context.Context, buf []byte) error {
	n, received, err := p.frames.Read(buf)
	if err != nil {
		return err
	}
	p.handle(ctx, buf[:n], received)
	return nil
}

// handle decides what to do with one frame read from the socket, received
// by the kernel at received.
func (p *arpProto) handle(ctx context.Context, b []byte, received time.Time) {
	p.spec.checkAwake()
	pkt, frame, err := parseARPFrame(b)
	if err != nil {
		p.spec.countMalformed(err)
		return
	}
	if vip, by, ok := arpTakeover(pkt, frame.Source, p.spec.mac, p.spec.announces); ok {
		if bytes.Equal(frame.Destination, p.spec.mac) {
			p.spec.notice(vip, by)
		} else {
			p.spec.yield(vip, by)
		}
		return
	}
	if vip, by, ok := arpGaveUp(pkt, frame.Destination, p.spec.mac); ok {
		if p.spec.gaveUp != nil {
			p.spec.gaveUp(vip, by)
		}
		return
	}
	if vip, by, ok := arpAnswerFor(pkt, frame.Destination, p.spec.mac); ok {
		if p.spec.heard != nil {
			p.spec.heard(vip, by)
		}
		return
	}
	if vip, by, ok := arpProbeFrom(pkt, p.spec.mac); ok && p.spec.asked != nil {
		p.spec.asked(vip, by)
	}
	vip, ok := arpRequestFor(pkt, frame.Destination, p.spec.mac, p.spec.owns)
	if !ok {
		return
	}
	p.reply(ctx, p.spec.log, pkt, vip, received)
}

// parseARPFrame parses an Ethernet frame carrying an ARP packet, as
// arp.Client.Read does.
func parseARPFrame(b []byte) (*arp.Packet, *ethernet.Frame, error) {
	var f ethernet.Frame
	if err := f.UnmarshalBinary(b); err != nil {
		return nil, nil, fmt.Errorf("ethernet frame: %w", err)
	}
	if f.EtherType != ethernet.EtherTypeARP {
		return nil, nil, fmt.Errorf("ethertype %#04x is not ARP", uint16(f.EtherType))
	}
	var pkt arp.Packet
	if err := pkt.UnmarshalBinary(f.Payload); err != nil {
		return nil, nil, fmt.Errorf("ARP packet: %w", err)
	}
	return &pkt, &f, nil
}

func (p *arpProto) reply(ctx context.Context, log *slog.Logger, req *arp.Packet, vip netip.Addr, received time.Time) {
	p.spec.metrics.requests.WithLabelValues(p.spec.iface, protoARP).Inc()
	sent, err := p.spec.sendAnswer(vip, received, func() error { return p.client.Reply(req, p.spec.mac, vip) })
	if err != nil {
		log.Warn("sending ARP reply failed", "ip", vip, "to", req.SenderIP, "error", err)
		return
	}
	if !sent {
		return
	}
	p.spec.delays.answered(vip, received)
	if log.Enabled(ctx, slog.LevelDebug) {
		log.Debug("answered ARP request", "ip", vip, "from", req.SenderIP, "mac", req.SenderHardwareAddr)
	}
}

// gratuitous broadcasts an ARP reply whose sender and target are vip.
func (p *arpProto) gratuitous(vip netip.Addr) error {
	pkt, err := arp.NewPacket(arp.OperationReply, p.spec.mac, vip, ethernet.Broadcast, vip)
	if err != nil {
		return fmt.Errorf("gratuitous ARP for %s: %w", vip, err)
	}
	if err := p.client.WriteTo(pkt, ethernet.Broadcast); err != nil {
		return fmt.Errorf("gratuitous ARP for %s: %w", vip, err)
	}
	return nil
}

// notify sends a gratuitous ARP reply for vip to the MAC to alone: no other
// host's kernel reads a frame sent to another MAC, even when a switch
// floods it.
func (p *arpProto) notify(vip netip.Addr, to net.HardwareAddr) error {
	pkt, err := arp.NewPacket(arp.OperationReply, p.spec.mac, vip, to, vip)
	if err != nil {
		return fmt.Errorf("gratuitous ARP for %s to %s: %w", vip, to, err)
	}
	if err := p.client.WriteTo(pkt, to); err != nil {
		return fmt.Errorf("gratuitous ARP for %s to %s: %w", vip, to, err)
	}
	return nil
}

// solicit broadcasts an ARP probe for vip (sender address 0.0.0.0, as in
// RFC 5227, so that no host learns a mapping from it): the owner answers
// it with a reply to this node's MAC.
func (p *arpProto) solicit(vip netip.Addr) error { return p.probe(vip, ethernet.Broadcast) }

// giveUp sends an ARP probe for vip to the MAC to alone: this node gave
// vip up (see tellBeaten).
func (p *arpProto) giveUp(vip netip.Addr, to net.HardwareAddr) error { return p.probe(vip, to) }

// probe sends an ARP probe for vip (sender address 0.0.0.0) to the MAC to.
func (p *arpProto) probe(vip netip.Addr, to net.HardwareAddr) error {
	pkt, err := arp.NewPacket(arp.OperationRequest, p.spec.mac, netip.IPv4Unspecified(), to, vip)
	if err != nil {
		return fmt.Errorf("ARP probe for %s to %s: %w", vip, to, err)
	}
	if err := p.client.WriteTo(pkt, to); err != nil {
		return fmt.Errorf("ARP probe for %s to %s: %w", vip, to, err)
	}
	return nil
}

// arpGaveUp decides whether pkt, received in a frame sent to dst, is
// another host's ARP probe (sender address 0.0.0.0) sent to this node's
// MAC alone: that host gave up the VIP it asks for (giveUp). It returns the
// VIP and the host's MAC.
func arpGaveUp(pkt *arp.Packet, dst, ourMAC net.HardwareAddr) (netip.Addr, net.HardwareAddr, bool) {
	if pkt == nil || pkt.Operation != arp.OperationRequest || !bytes.Equal(dst, ourMAC) {
		return netip.Addr{}, nil, false
	}
	if !isOtherHost(pkt.SenderHardwareAddr, ourMAC) || pkt.SenderIP != netip.IPv4Unspecified() {
		return netip.Addr{}, nil, false
	}
	vip := pkt.TargetIP
	if !vip.Is4() || vip.IsUnspecified() || vip.IsMulticast() {
		return netip.Addr{}, nil, false
	}
	return vip, pkt.SenderHardwareAddr, true
}

// arpProbeFrom decides whether pkt is another host's ARP probe (sender
// address 0.0.0.0): that host asks who answers the address. It returns
// the address and the host's MAC.
func arpProbeFrom(pkt *arp.Packet, ourMAC net.HardwareAddr) (netip.Addr, net.HardwareAddr, bool) {
	if pkt == nil || pkt.Operation != arp.OperationRequest || pkt.SenderIP != netip.IPv4Unspecified() {
		return netip.Addr{}, nil, false
	}
	if !isOtherHost(pkt.SenderHardwareAddr, ourMAC) || !pkt.TargetIP.Is4() {
		return netip.Addr{}, nil, false
	}
	return pkt.TargetIP, pkt.SenderHardwareAddr, true
}

// arpAnswerFor decides whether pkt, received in a frame sent to dst, is
// another host's ARP reply to this node (an answer to solicit), and
// returns the address it answers for and the answering host's MAC.
func arpAnswerFor(pkt *arp.Packet, dst, ourMAC net.HardwareAddr) (netip.Addr, net.HardwareAddr, bool) {
	if pkt == nil || pkt.Operation != arp.OperationReply || !bytes.Equal(dst, ourMAC) {
		return netip.Addr{}, nil, false
	}
	if !isOtherHost(pkt.SenderHardwareAddr, ourMAC) || !pkt.SenderIP.Is4() || pkt.SenderIP == pkt.TargetIP {
		return netip.Addr{}, nil, false
	}
	return pkt.SenderIP, slices.Clone(pkt.SenderHardwareAddr), true
}

// arpRequestFor decides whether pkt, received in a frame sent to dst, is a
// request this node must answer, and for which VIP. It must be a who-has
// request, broadcast or sent to our MAC, not sent by us, not a gratuitous
// ARP of another host (sender = target), for a VIP we own.
func arpRequestFor(pkt *arp.Packet, dst, ourMAC net.HardwareAddr, owns func(netip.Addr) bool) (netip.Addr, bool) {
	if pkt == nil || pkt.Operation != arp.OperationRequest {
		return netip.Addr{}, false
	}
	if !bytes.Equal(dst, ethernet.Broadcast) && !bytes.Equal(dst, ourMAC) {
		return netip.Addr{}, false
	}
	if bytes.Equal(pkt.SenderHardwareAddr, ourMAC) {
		return netip.Addr{}, false
	}
	vip := pkt.TargetIP
	if !vip.Is4() || pkt.SenderIP == vip || !owns(vip) {
		return netip.Addr{}, false
	}
	return vip, true
}
