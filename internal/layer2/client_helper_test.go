package layer2

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"github.com/mdlayher/packet"

	"github.com/herald-lb/herald/internal/pktstamp"
)

// frame is an ARP or NDP frame seen on the client's eth0, in either
// direction.
type frame struct {
	T         int64  `json:"t"`    // unix ns when the kernel received it
	Kind      string `json:"kind"` // arp-request, arp-reply, ns, na
	Src       string `json:"src"`  // Ethernet source and destination
	Dst       string `json:"dst"`
	SPA       string `json:"spa,omitempty"` // ARP sender and target IP
	TPA       string `json:"tpa,omitempty"`
	SHA       string `json:"sha,omitempty"` // ARP sender MAC
	IPSrc     string `json:"ipsrc,omitempty"`
	IPDst     string `json:"ipdst,omitempty"`
	Target    string `json:"target,omitempty"` // NS/NA target
	Solicited bool   `json:"s,omitempty"`
	Override  bool   `json:"o,omitempty"`
	TLL       string `json:"tll,omitempty"` // NA target link-layer address
}

func (f frame) time() time.Time { return time.Unix(0, f.T) }

// runClientHelper sniffs ARP and NDP on eth0 (an ETH_P_ALL packet socket
// sees both directions) and, on "probe <ip> <interval>", sends ARP requests
// for ip until "stop"; on "probeall <ipv4> <ipv6> <interval>", ARP requests
// and neighbour solicitations from rotating sources (see probeBoth).
func runClientHelper() {
	var out helperOut
	ifi, err := net.InterfaceByName("eth0")
	if err != nil {
		out.printf("error %v", err)
		return
	}
	const ethPAll = 0x0003
	sniff, err := packet.Listen(ifi, packet.Raw, ethPAll, nil)
	if err != nil {
		out.printf("error %v", err)
		return
	}
	defer sniff.Close()
	rd, err := pktstamp.NewReader(sniff)
	if err != nil {
		out.printf("error %v", err)
		return
	}
	go sniffLoop(rd, &out)
	out.printf("ready")
	var stop context.CancelFunc = func() {}
	var garbage sender
	defer garbage.stop()
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "probe":
			stop()
			var ctx context.Context
			ctx, stop = context.WithCancel(context.Background())
			d, _ := time.ParseDuration(f[2])
			go probeARP(ctx, ifi, netip.MustParseAddr(f[1]), d)
			out.printf("probing")
		case len(f) == 4 && f[0] == "probeall":
			stop()
			d, _ := time.ParseDuration(f[3])
			stop = probeBoth(context.Background(), ifi, netip.MustParseAddr(f[1]), netip.MustParseAddr(f[2]), d)
			out.printf("probing")
		case len(f) == 3 && f[0] == "garbage":
			d, _ := time.ParseDuration(f[1])
			n, _ := strconv.Atoi(f[2])
			garbage.start(func(ctx context.Context) { sendGarbage(ctx, sniff, ifi, d, n) })
			out.printf("garbage")
		case len(f) == 1 && f[0] == "nogarbage":
			garbage.stop()
			out.printf("nogarbage")
		case len(f) == 1 && f[0] == "stop":
			stop()
			out.printf("stopped")
		}
	}
	stop()
}

// sniffLoop reports every ARP and NDP frame with the time the kernel
// received it: on a busy machine the helper may read a frame well after
// it arrived, and tests compare frame times with the announcers' calls.
func sniffLoop(rd *pktstamp.Reader, out *helperOut) {
	buf := make([]byte, 9000)
	for {
		n, at, err := rd.Read(buf)
		if err != nil {
			return
		}
		f, ok := describeFrame(buf[:n])
		if !ok {
			continue
		}
		f.T = at.UnixNano()
		b, _ := json.Marshal(f)
		out.printf("frame %s", b)
	}
}

func describeFrame(b []byte) (frame, bool) {
	var ef ethernet.Frame
	if ef.UnmarshalBinary(b) != nil {
		return frame{}, false
	}
	f := frame{Src: ef.Source.String(), Dst: ef.Destination.String()}
	switch ef.EtherType {
	case ethernet.EtherTypeARP:
		var p arp.Packet
		if p.UnmarshalBinary(ef.Payload) != nil {
			return frame{}, false
		}
		f.Kind = "arp-request"
		if p.Operation == arp.OperationReply {
			f.Kind = "arp-reply"
		}
		f.SPA, f.TPA, f.SHA = p.SenderIP.String(), p.TargetIP.String(), p.SenderHardwareAddr.String()
		return f, true
	case ethernet.EtherTypeIPv6:
		return describeNDP(f, ef.Payload)
	}
	return frame{}, false
}

func describeNDP(f frame, ip []byte) (frame, bool) {
	if len(ip) < ipv6HeaderLen+4 || ip[6] != protoICMPv6 {
		return frame{}, false
	}
	m, err := ndp.ParseMessage(ip[ipv6HeaderLen:])
	if err != nil {
		return frame{}, false
	}
	f.IPSrc = netip.AddrFrom16([16]byte(ip[8:24])).String()
	f.IPDst = netip.AddrFrom16([16]byte(ip[24:40])).String()
	switch m := m.(type) {
	case *ndp.NeighborSolicitation:
		f.Kind, f.Target = "ns", m.TargetAddress.String()
	case *ndp.NeighborAdvertisement:
		f.Kind, f.Target, f.Solicited, f.Override = "na", m.TargetAddress.String(), m.Solicited, m.Override
		for _, o := range m.Options {
			if lla, ok := o.(*ndp.LinkLayerAddress); ok && lla.Direction == ndp.Target {
				f.TLL = lla.Addr.String()
			}
		}
	default:
		return frame{}, false
	}
	return f, true
}

// probeARP broadcasts who-has requests for ip every interval.
func probeARP(ctx context.Context, ifi *net.Interface, ip netip.Addr, interval time.Duration) {
	c, err := arp.Dial(ifi)
	if err != nil {
		return
	}
	defer c.Close()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		_ = c.Request(ip)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sendGarbage broadcasts, every interval until ctx ends, a burst of n
// malformed ARP frames: a who-has for a lab VIP with protocol length 0,
// and the same request truncated after the ARP header and mid-address.
func sendGarbage(ctx context.Context, c *packet.Conn, ifi *net.Interface, interval time.Duration, n int) {
	p, err := arp.NewPacket(arp.OperationRequest, ifi.HardwareAddr, netip.MustParseAddr(client4IP),
		net.HardwareAddr{0, 0, 0, 0, 0, 0}, netip.MustParseAddr(labVIP4))
	if err != nil {
		return
	}
	pb, _ := p.MarshalBinary()
	fb, _ := (&ethernet.Frame{Destination: ethernet.Broadcast, Source: ifi.HardwareAddr, EtherType: ethernet.EtherTypeARP, Payload: pb}).MarshalBinary()
	plen0 := append([]byte(nil), fb...)
	plen0[ethHeaderLen+5] = 0
	bad := [][]byte{plen0, fb[:ethHeaderLen+8], fb[:ethHeaderLen+17]}
	to := &packet.Addr{HardwareAddr: ethernet.Broadcast}
	tick(ctx, interval, func(i int) {
		for j := range n {
			_, _ = c.WriteTo(bad[(i*n+j)%len(bad)], to)
		}
	})
}

// sender runs one sending goroutine at a time.
type sender struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (s *sender) start(send func(ctx context.Context)) {
	s.stop()
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go func(done chan struct{}) { defer close(done); send(ctx) }(s.done)
}

func (s *sender) stop() {
	if s.cancel != nil {
		s.cancel()
		<-s.done
		s.cancel = nil
	}
}
