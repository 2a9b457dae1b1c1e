package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ndp"
	"github.com/mdlayher/packet"

	"github.com/herald-lb/herald/internal/pktstamp"
)

// Watch records gratuitous ARP and unsolicited neighbor advertisements
// seen on ifname until ctx ends. It emits Line{Ready: true} once the
// socket is open.
func Watch(ctx context.Context, ifname string, emit func(Line)) error {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return fmt.Errorf("interface %s: %w", ifname, err)
	}
	conn, err := packet.Listen(ifi, packet.Raw, ethPAll, nil)
	if err != nil {
		return fmt.Errorf("raw socket on %s: %w", ifname, err)
	}
	defer conn.Close()
	rd, err := pktstamp.NewReader(conn)
	if err != nil {
		return fmt.Errorf("raw socket on %s: %w", ifname, err)
	}
	emit(Line{Ready: true})
	buf := make([]byte, 1600)
	for ctx.Err() == nil {
		if err := conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
			return err
		}
		n, at, err := rd.Read(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		if err != nil {
			return err
		}
		if a, ok := announcement(buf[:n]); ok {
			a.At = at.UnixNano()
			emit(Line{Announcement: &a})
		}
	}
	return nil
}

// announcement classifies a frame as gratuitous ARP or unsolicited NA.
func announcement(b []byte) (Announcement, bool) {
	if pkt, f, err := parseARP(b); err == nil {
		if pkt.SenderIP != pkt.TargetIP {
			return Announcement{}, false
		}
		kind := "garp-request"
		if pkt.Operation == arp.OperationReply {
			kind = "garp-reply"
		}
		return Announcement{Kind: kind, IP: pkt.SenderIP.String(), MAC: pkt.SenderHardwareAddr.String(), EthSource: f.Source.String()}, true
	}
	m, err := parseNDP(b)
	if err != nil {
		return Announcement{}, false
	}
	na, ok := m.msg.(*ndp.NeighborAdvertisement)
	if !ok || na.Solicited {
		return Announcement{}, false
	}
	mac := targetMAC(na)
	if mac == "" {
		mac = m.eth.Source.String()
	}
	return Announcement{
		Kind: "unsolicited-na", IP: na.TargetAddress.String(), MAC: mac, EthSource: m.eth.Source.String(),
		Dst: m.dst.String(), Override: na.Override, Router: na.Router,
	}, true
}
