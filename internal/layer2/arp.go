package layer2

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
)

// arpProto answers ARP requests for the VIPs announced on one interface.
type arpProto struct {
	spec   responderSpec
	client *arp.Client
}

func newARPProto(spec responderSpec) *arpProto { return &arpProto{spec: spec} }

func (p *arpProto) open(ifi *net.Interface) error {
	c, err := arp.Dial(ifi)
	if err != nil {
		return fmt.Errorf("open ARP socket: %w", err)
	}
	p.client = c
	return nil
}

func (p *arpProto) close() {
	// Close also ends the pending Read; its error is reported there.
	_ = p.client.Close()
}

func (p *arpProto) setVIPs([]netip.Addr) {}

func (p *arpProto) serve(ctx context.Context, wg *sync.WaitGroup) {
	wg.Go(func() { p.readLoop(ctx) })
}

func (p *arpProto) readLoop(ctx context.Context) {
	log := p.spec.log
	bo := newBackoff(10*time.Millisecond, time.Second)
	for {
		pkt, frame, err := p.client.Read()
		if err != nil {
			if !readFailed(ctx, log, bo, err) {
				return
			}
			continue
		}
		bo.reset()
		if vip, by, ok := arpTakeover(pkt, frame.Source, p.spec.mac, p.spec.announces); ok {
			p.spec.yield(vip, by)
			continue
		}
		vip, ok := arpRequestFor(pkt, frame.Destination, p.spec.mac, p.spec.owns)
		if !ok {
			continue
		}
		p.reply(ctx, log, pkt, vip)
	}
}

func (p *arpProto) reply(ctx context.Context, log *slog.Logger, req *arp.Packet, vip netip.Addr) {
	p.spec.metrics.requests.WithLabelValues(p.spec.iface, protoARP).Inc()
	p.spec.sending.RLock()
	err := p.client.Reply(req, p.spec.mac, vip)
	p.spec.sending.RUnlock()
	if err != nil {
		log.Warn("sending ARP reply failed", "vip", vip, "to", req.SenderIP, "error", err)
		return
	}
	p.spec.metrics.responses.WithLabelValues(p.spec.iface, protoARP).Inc()
	if log.Enabled(ctx, slog.LevelDebug) {
		log.Debug("answered ARP request", "vip", vip, "from", req.SenderIP, "mac", req.SenderHardwareAddr)
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
