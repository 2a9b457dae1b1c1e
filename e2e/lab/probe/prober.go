package probe

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ndp"
	"github.com/mdlayher/packet"

	"github.com/herald-lb/herald/internal/pktstamp"
)

// EtherTypes the raw sockets listen for.
const (
	ethPAll  = 0x0003
	ethPARP  = 0x0806
	ethPIPv6 = 0x86dd
)

// Prober asks one interface's segment who has one address (ARP who-has
// for IPv4, neighbor solicitation for IPv6) and reads the answers.
type Prober struct {
	conn   *packet.Conn
	rd     *pktstamp.Reader
	ifi    *net.Interface
	target netip.Addr
	srcs   []netip.Addr        // the addresses probes are sent from
	ours   map[netip.Addr]bool // srcs, for matching answers
	frames [][]byte            // one request per source
	buf    []byte
}

// NewProber opens a raw socket on ifname. The source address is the
// interface's IPv4 address, or its first global IPv6 address. For IPv6 an
// empty dstMAC sends the NS to the target's solicited-node group; a MAC
// sends a unicast NS (IPv6 destination: the target) to that station.
func NewProber(ifname string, target netip.Addr, dstMAC net.HardwareAddr) (*Prober, error) {
	return NewProberFrom(ifname, target, dstMAC, nil)
}

// NewProberFrom is NewProber with the requests sent from srcs (SendFrom
// picks one); none means the interface's address.
func NewProberFrom(ifname string, target netip.Addr, dstMAC net.HardwareAddr, srcs []netip.Addr) (*Prober, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("interface %s: %w", ifname, err)
	}
	if len(srcs) == 0 {
		src, err := sourceAddr(ifi, target.Is4())
		if err != nil {
			return nil, err
		}
		srcs = []netip.Addr{src}
	}
	p := &Prober{ifi: ifi, target: target, srcs: srcs, ours: map[netip.Addr]bool{}, buf: make([]byte, 1600)}
	proto := ethPARP
	if !target.Is4() {
		proto = ethPIPv6
	}
	for _, src := range srcs {
		if src.Is4() != target.Is4() {
			return nil, fmt.Errorf("source %v and target %v are not of one family", src, target)
		}
		var frame []byte
		if target.Is4() {
			frame, err = arpRequest(ifi.HardwareAddr, src, target)
		} else {
			frame, err = p.nsFrame(src, dstMAC)
		}
		if err != nil {
			return nil, err
		}
		p.ours[src] = true
		p.frames = append(p.frames, frame)
	}
	if p.conn, err = packet.Listen(ifi, packet.Raw, proto, nil); err != nil {
		return nil, fmt.Errorf("raw socket on %s: %w", ifname, err)
	}
	if p.rd, err = pktstamp.NewReader(p.conn); err != nil {
		p.conn.Close()
		return nil, fmt.Errorf("raw socket on %s: %w", ifname, err)
	}
	return p, nil
}

func (p *Prober) nsFrame(src netip.Addr, dstMAC net.HardwareAddr) ([]byte, error) {
	if len(dstMAC) != 0 {
		return nsFrame(p.ifi.HardwareAddr, dstMAC, src, p.target, p.target)
	}
	group, err := ndp.SolicitedNodeMulticast(p.target)
	if err != nil {
		return nil, err
	}
	return nsFrame(p.ifi.HardwareAddr, multicastMAC(group), src, group, p.target)
}

func sourceAddr(ifi *net.Interface, v4 bool) (netip.Addr, error) {
	addrs, err := ifi.Addrs()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("addresses of %s: %w", ifi.Name, err)
	}
	for _, a := range addrs {
		pfx, err := netip.ParsePrefix(a.String())
		if err != nil {
			continue
		}
		ip := pfx.Addr()
		if v4 && ip.Is4() || !v4 && ip.Is6() && ip.IsGlobalUnicast() {
			return ip, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("%s has no usable source address (IPv4: %v)", ifi.Name, v4)
}

// Close closes the socket.
func (p *Prober) Close() error { return p.conn.Close() }

// Send sends one probe from the first source.
func (p *Prober) Send() error { return p.SendFrom(0) }

// SendFrom sends one probe from source i (of the sources it was made with).
func (p *Prober) SendFrom(i int) error {
	frame := p.frames[i]
	dst := &packet.Addr{HardwareAddr: net.HardwareAddr(frame[0:6])}
	if _, err := p.conn.WriteTo(frame, dst); err != nil {
		return fmt.Errorf("sending probe for %v from %v on %s: %w", p.target, p.srcs[i], p.ifi.Name, err)
	}
	return nil
}

// Next returns the next answer for the target, or an error wrapping
// os.ErrDeadlineExceeded when none came before deadline. Answer.At is
// when the kernel received the frame.
func (p *Prober) Next(deadline time.Time) (Answer, error) {
	if err := p.conn.SetReadDeadline(deadline); err != nil {
		return Answer{}, err
	}
	for {
		n, at, err := p.rd.Read(p.buf)
		if err != nil {
			return Answer{}, err
		}
		if a, ok := p.answer(p.buf[:n]); ok {
			a.At = at.UnixNano()
			return a, nil
		}
	}
}

// Pending returns the answers the kernel has received and the prober has
// not read yet, without waiting.
func (p *Prober) Pending() ([]Answer, error) {
	var out []Answer
	for {
		n, at, ok, err := p.rd.ReadPending(p.buf)
		if err != nil || !ok {
			return out, err
		}
		if a, ok := p.answer(p.buf[:n]); ok {
			a.At = at.UnixNano()
			out = append(out, a)
		}
	}
}

func (p *Prober) answer(b []byte) (Answer, bool) {
	if p.target.Is4() {
		return p.arpAnswer(b)
	}
	return p.ndpAnswer(b)
}

func (p *Prober) arpAnswer(b []byte) (Answer, bool) {
	pkt, f, err := parseARP(b)
	if err != nil || pkt.Operation != arp.OperationReply || pkt.SenderIP != p.target {
		return Answer{}, false
	}
	if !p.ours[pkt.TargetIP] {
		return Answer{}, false
	}
	return Answer{MAC: pkt.SenderHardwareAddr.String(), EthSource: f.Source.String(), Source: pkt.SenderIP.String(),
		To: p.to(pkt.TargetIP)}, true
}

// to names a source as a probe's From and an answer's To: "" when there
// is one source (nothing to tell apart).
func (p *Prober) to(dst netip.Addr) string {
	if len(p.srcs) < 2 {
		return ""
	}
	return dst.String()
}

func (p *Prober) ndpAnswer(b []byte) (Answer, bool) {
	m, err := parseNDP(b)
	if err != nil {
		return Answer{}, false
	}
	if !p.ours[m.dst] {
		return Answer{}, false
	}
	na, ok := m.msg.(*ndp.NeighborAdvertisement)
	if !ok || na.TargetAddress != p.target {
		return Answer{}, false
	}
	mac := targetMAC(na)
	if mac == "" {
		mac = m.eth.Source.String()
	}
	return Answer{
		MAC: mac, EthSource: m.eth.Source.String(), Source: m.src.String(),
		Router: na.Router, Solicited: na.Solicited, Override: na.Override, To: p.to(m.dst),
	}, true
}

// Once sends one probe and returns every answer read within window.
func Once(ifname string, target netip.Addr, dstMAC net.HardwareAddr, window time.Duration) ([]Answer, error) {
	p, err := NewProber(ifname, target, dstMAC)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if err := p.Send(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(window)
	answers := []Answer{}
	for {
		a, err := p.Next(deadline)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return answers, nil
		}
		if err != nil {
			return answers, err
		}
		answers = append(answers, a)
	}
}

// PrefixAddrs lists every address of p, in order (Monitor's sources).
func PrefixAddrs(p netip.Prefix) []netip.Addr {
	p = p.Masked()
	var out []netip.Addr
	for a := p.Addr(); p.Contains(a); a = a.Next() {
		out = append(out, a)
	}
	return out
}
