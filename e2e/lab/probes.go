package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/herald-lb/herald/e2e/lab/probe"
	"github.com/herald-lb/herald/test/labkit"
)

// Answer is one answer to an ARP who-has or a neighbor solicitation sent
// from the client.
type Answer struct {
	// MAC is the address the answer claims for the probed address.
	MAC net.HardwareAddr
	// Node owns MAC on the segment ("node2", "router"...), or "".
	Node string
	// EthSource is the frame's Ethernet source.
	EthSource net.HardwareAddr
	// Source is the answer's IP source (NDP: link-local or global).
	Source netip.Addr
	At     time.Time
	// NA flags (IPv6).
	Router, Solicited, Override bool
	// To is the probe source the answer was sent to, when the monitor
	// probes from several (Probe.From), else invalid.
	To netip.Addr
}

func (l *Lab) answers(in []probe.Answer) []Answer {
	out := make([]Answer, 0, len(in))
	for _, a := range in {
		mac, _ := net.ParseMAC(a.MAC)
		eth, _ := net.ParseMAC(a.EthSource)
		src, _ := netip.ParseAddr(a.Source)
		to, _ := netip.ParseAddr(a.To) // "": one source
		out = append(out, Answer{MAC: mac, Node: l.NodeOfMAC(mac), EthSource: eth, Source: src,
			At: time.Unix(0, a.At), Router: a.Router, Solicited: a.Solicited, Override: a.Override, To: to})
	}
	return out
}

// ARPProbe sends one ARP who-has for vip from the client and returns
// every answer that came within the probe window (Options.ProbeWindow).
// No answer is an empty list, not an error.
func (l *Lab) ARPProbe(ctx context.Context, vip netip.Addr) ([]Answer, error) {
	if !vip.Is4() {
		return nil, fmt.Errorf("ARP probe: %v is not IPv4 (use NDPProbe)", vip)
	}
	return l.probeOnce(ctx, "arp", vip, nil)
}

// NDPProbe sends one neighbor solicitation for vip from the client's
// global address and returns every solicited advertisement within the
// probe window. Multicast goes to vip's solicited-node group; unicast
// (a NUD probe) goes to the MAC the client's neighbor cache holds for
// vip, or else to the first MAC a multicast probe finds.
func (l *Lab) NDPProbe(ctx context.Context, vip netip.Addr, unicast bool) ([]Answer, error) {
	if !vip.Is6() {
		return nil, fmt.Errorf("NDP probe: %v is not IPv6 (use ARPProbe)", vip)
	}
	if !unicast {
		return l.probeOnce(ctx, "ndp", vip, nil)
	}
	entry, err := l.Neighbor(ctx, Client, vip)
	if err != nil {
		return nil, err
	}
	mac := entry.MAC
	if mac == nil {
		found, err := l.probeOnce(ctx, "ndp", vip, nil)
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("unicast NDP probe of %v: nobody answers a multicast NS, so no MAC to send to", vip)
		}
		mac = found[0].MAC
	}
	return l.NDPProbeTo(ctx, vip, mac)
}

// NDPProbeTo sends a unicast neighbor solicitation for vip to mac.
func (l *Lab) NDPProbeTo(ctx context.Context, vip netip.Addr, mac net.HardwareAddr) ([]Answer, error) {
	return l.probeOnce(ctx, "ndp", vip, mac)
}

func (l *Lab) probeOnce(ctx context.Context, kind string, vip netip.Addr, mac net.HardwareAddr) ([]Answer, error) {
	argv := []string{l.bin.labprobe, kind, "-i", "eth0", "-target", vip.String(), "-window", l.opts.ProbeWindow.String()}
	if mac != nil {
		argv = append(argv, "-dst-mac", mac.String())
	}
	out, err := run(ctx, labkit.InNS(l.ns(Client), argv...)...)
	if err != nil {
		return nil, fmt.Errorf("%s probe of %v: %w", kind, vip, err)
	}
	var raw []probe.Answer
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		return nil, fmt.Errorf("%s probe of %v: parsing %q: %w", kind, vip, out, err)
	}
	return l.answers(raw), nil
}

// Announce makes host send one gratuitous ARP (IPv4) or unsolicited
// neighbor advertisement with Override (IPv6, to ff02::1) for addr from
// its eth0: what a speaker sends when it takes a VIP over. The lab uses
// it to test its own observers; tests can use it to play a speaker.
func (l *Lab) Announce(ctx context.Context, host string, addr netip.Addr) error {
	_, err := l.Exec(ctx, host, l.bin.labprobe, "announce", "-i", "eth0", "-target", addr.String())
	return err
}

// PodAnswer is what a pod server answered.
type PodAnswer struct {
	Pod string `json:"pod"`
	// Node is the node the answering pod runs on.
	Node   string `json:"node"`
	Client string `json:"client"`
	Server string `json:"server"`
	// ClientAddr is Client parsed: the source address the pod saw.
	ClientAddr netip.AddrPort `json:"-"`
}

// HTTPGet sends GET http://addr:port/ from host (e.g. "client" or "ext")
// on a new connection, and reports which pod answered and the source
// address it saw.
func (l *Lab) HTTPGet(ctx context.Context, host string, addr netip.Addr, port int) (PodAnswer, error) {
	url := "http://" + netip.AddrPortFrom(addr, uint16(port)).String() + "/"
	out, err := l.Exec(ctx, host, l.bin.labprobe, "http", "-url", url, "-timeout", "3s")
	if err != nil {
		return PodAnswer{}, fmt.Errorf("HTTP from %s: %w", host, err)
	}
	return parsePodAnswer(out, host, url)
}
