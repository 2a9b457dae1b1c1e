package members

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// transport is memberlist's UDP and TCP transport on one address, as
// memberlist.NetTransport is, except that it reads every UDP packet into
// one buffer and hands memberlist a copy of the packet's size: NetTransport
// allocates a fresh 64 KiB buffer per packet, which at the default timing's
// 25 packets a second was 87% of an idle speaker's allocations (1.6 MB/s)
// and a garbage collection every 2 s; under CPU starvation each collection
// stops the speaker's answers for its stop-the-world phases (up to 105 ms
// measured).
type transport struct {
	log      *slog.Logger
	udp      *net.UDPConn
	tcp      *net.TCPListener
	packetCh chan *memberlist.Packet
	streamCh chan net.Conn
	wg       sync.WaitGroup
	shutdown atomic.Bool
	once     sync.Once
}

var _ memberlist.NodeAwareTransport = (*transport)(nil)

const (
	// maxPacket holds any UDP datagram.
	maxPacket = 65536
	// udpRecvBuffer is the socket receive buffer asked for (halved until
	// the kernel accepts it), as NetTransport does.
	udpRecvBuffer = 2 << 20
)

// newTransport listens on addr:port (TCP and UDP; port 0: one the kernel
// picks for TCP, then the same for UDP, retried when UDP finds it taken).
func newTransport(addr string, port int, log *slog.Logger) (*transport, error) {
	ip := net.ParseIP(addr)
	if ip == nil {
		return nil, fmt.Errorf("bind address %q is not an IP address", addr)
	}
	attempts := 1
	if port == 0 {
		attempts = 10
	}
	var err error
	for range attempts {
		var t *transport
		if t, err = listen(ip, port, log); err == nil {
			t.wg.Add(2)
			go t.udpLoop()
			go t.tcpLoop()
			return t, nil
		}
	}
	return nil, err
}

func listen(ip net.IP, port int, log *slog.Logger) (*transport, error) {
	tcp, err := net.ListenTCP("tcp", &net.TCPAddr{IP: ip, Port: port})
	if err != nil {
		return nil, fmt.Errorf("TCP listener on %s port %d: %w", ip, port, err)
	}
	port = tcp.Addr().(*net.TCPAddr).Port
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip, Port: port})
	if err != nil {
		_ = tcp.Close()
		return nil, fmt.Errorf("UDP listener on %s port %d: %w", ip, port, err)
	}
	for size := udpRecvBuffer; size > 0; size /= 2 {
		if err = udp.SetReadBuffer(size); err == nil {
			break
		}
	}
	if err != nil {
		_ = tcp.Close()
		_ = udp.Close()
		return nil, fmt.Errorf("UDP receive buffer on %s port %d: %w", ip, port, err)
	}
	return &transport{log: log, udp: udp, tcp: tcp, packetCh: make(chan *memberlist.Packet), streamCh: make(chan net.Conn)}, nil
}

// port is the port listened on.
func (t *transport) port() int { return t.tcp.Addr().(*net.TCPAddr).Port }

// FinalAdvertiseAddr is the address given, or the one listened on.
func (t *transport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	if ip == "" {
		bound := t.tcp.Addr().(*net.TCPAddr).IP
		if bound.IsUnspecified() {
			return nil, 0, errors.New("listening on every address: an advertise address is needed")
		}
		return bound, t.port(), nil
	}
	a := net.ParseIP(ip)
	if a == nil {
		return nil, 0, fmt.Errorf("advertise address %q is not an IP address", ip)
	}
	if a4 := a.To4(); a4 != nil {
		a = a4
	}
	return a, port, nil
}

// WriteTo sends a packet to addr (IP:port).
func (t *transport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.WriteToAddress(b, memberlist.Address{Addr: addr})
}

// WriteToAddress sends a packet to a.Addr (IP:port; a host name is
// resolved).
func (t *transport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	if ap, err := netip.ParseAddrPort(a.Addr); err == nil {
		_, err = t.udp.WriteToUDPAddrPort(b, ap)
		return time.Now(), err
	}
	ua, err := net.ResolveUDPAddr("udp", a.Addr)
	if err != nil {
		return time.Time{}, err
	}
	_, err = t.udp.WriteTo(b, ua)
	return time.Now(), err
}

// PacketCh delivers the packets received.
func (t *transport) PacketCh() <-chan *memberlist.Packet { return t.packetCh }

// DialTimeout opens a stream to addr.
func (t *transport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

// DialAddressTimeout opens a stream to a.Addr.
func (t *transport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	return d.Dial("tcp", a.Addr)
}

// StreamCh delivers the streams accepted.
func (t *transport) StreamCh() <-chan net.Conn { return t.streamCh }

// Shutdown closes the sockets and waits for the loops; it may be called
// more than once.
func (t *transport) Shutdown() error {
	t.once.Do(func() {
		t.shutdown.Store(true)
		_ = t.tcp.Close()
		_ = t.udp.Close()
	})
	t.wg.Wait()
	return nil
}

// udpLoop reads packets until the socket closes. Each is copied out of the
// one read buffer: memberlist keeps some packets' bytes after it returns
// (queued messages), so a buffer is never reused once handed over.
func (t *transport) udpLoop() {
	defer t.wg.Done()
	buf := make([]byte, maxPacket)
	for {
		n, from, err := t.udp.ReadFromUDPAddrPort(buf)
		at := time.Now()
		if err != nil {
			if t.shutdown.Load() {
				return
			}
			t.log.Warn("reading a member-list packet failed", "error", err)
			continue
		}
		if n < 1 {
			continue
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		t.packetCh <- &memberlist.Packet{Buf: append([]byte(nil), buf[:n]...), From: net.UDPAddrFromAddrPort(from), Timestamp: at}
	}
}

// tcpLoop accepts streams until the listener closes, pausing after a
// failed accept (5 ms doubling to 1 s) so that a persistent error does not
// spin.
func (t *transport) tcpLoop() {
	defer t.wg.Done()
	var pause time.Duration
	for {
		conn, err := t.tcp.AcceptTCP()
		if err != nil {
			if t.shutdown.Load() {
				return
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			t.log.Warn("accepting a member-list stream failed", "error", err)
			time.Sleep(pause)
			continue
		}
		pause = 0
		t.streamCh <- conn
	}
}
