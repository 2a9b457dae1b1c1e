package lab

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"time"
)

// Garbage is a sender of malformed ARP frames on a lab host.
type Garbage struct{ s *stream }

// StartGarbage broadcasts n malformed ARP frames asking for target
// (protocol length 0, truncated ones: probe.MalformedARP) from host's
// eth0 every interval until Stop: what a broken or hostile host on the
// segment sends.
func (l *Lab) StartGarbage(host string, target netip.Addr, interval time.Duration, n int) (*Garbage, error) {
	if !target.Is4() || interval <= 0 || n < 1 {
		return nil, fmt.Errorf("malformed ARP sender: target %v, interval %s, %d frames: want IPv4, a positive interval and at least one frame", target, interval, n)
	}
	s, err := l.startStream(host, "garbage-"+target.String(), "garbage", "-i", "eth0", "-target", target.String(), "-interval", interval.String(), "-n", strconv.Itoa(n))
	if err != nil {
		return nil, err
	}
	return &Garbage{s: s}, nil
}

// Stop ends the sender.
func (g *Garbage) Stop() error { return g.s.stop() }

// Spoofer is a labprobe spoof process: a LAN host claiming an address for
// a made-up MAC and answering the speakers' probes for it.
type Spoofer struct{ s *stream }

// StartSpoof makes host claim target (IPv4) for the made-up MAC mac: one
// gratuitous ARP, then an answer to every ARP probe for target (a
// speaker's fence asking who answers), and to nothing else. It returns once
// the gratuitous ARP is out.
func (l *Lab) StartSpoof(host string, target netip.Addr, mac net.HardwareAddr) (*Spoofer, error) {
	s, err := l.startStream(host, "spoof-"+target.String(), "spoof", "-i", "eth0", "-target", target.String(), "-mac", mac.String())
	if err != nil {
		return nil, err
	}
	return &Spoofer{s: s}, nil
}

// Stop ends the spoofer.
func (sp *Spoofer) Stop() error { return sp.s.stop() }

// Responder is a labprobe respond process: a user-space ARP responder on
// a node, scheduled like the node's pods (see StartResponder).
type Responder struct{ s *stream }

// StartResponder makes node answer ARP requests for addr (IPv4, an
// address nobody else holds) from a user-space process with the node's
// MAC, as a speaker does, and moves that process into the node's CPU
// cgroup root, beside its pods (failing that, it stays at the weight of
// the lab's processes, and says so in the lab's log): a control for what the machine's CPU
// starvation does to a speaker's answers, measured by the same client.
// It returns once the process listens.
func (l *Lab) StartResponder(node string, addr netip.Addr) (*Responder, error) {
	n, err := l.Node(node)
	if err != nil {
		return nil, err
	}
	s, err := l.startStream(node, "respond-"+addr.String(), "respond", "-i", "eth0", "-target", addr.String())
	if err != nil {
		return nil, err
	}
	if err := moveToCgroup(filepath.Join(cgroupMount, "cpu", l.nodeCgroup(n)), s.proc.PID()); err != nil {
		// it answers all the same, at the weight of the lab's processes
		l.log.Warn("responder left outside the node's CPU cgroup", "node", node, "error", err)
	}
	return &Responder{s: s}, nil
}

// Stop ends the responder.
func (r *Responder) Stop() error { return r.s.stop() }
