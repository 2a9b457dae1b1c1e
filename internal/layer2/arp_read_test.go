package layer2

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"golang.org/x/net/ipv6"
)

// frameConn is a packet socket that hands out queued frames, then fails
// with errClosedConn.
type frameConn struct {
	mu         sync.Mutex
	frames     [][]byte
	receivedAt time.Time
}

func (c *frameConn) framesLeft() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.frames
}

var errClosedConn = errors.New("socket closed")

// Read hands out the next frame, received (by the fake kernel) received
// ago, or receivedAt when set.
func (c *frameConn) Read(b []byte) (int, time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.frames) == 0 {
		return 0, time.Time{}, errClosedConn
	}
	f := c.frames[0]
	c.frames = c.frames[1:]
	at := time.Now()
	if !c.receivedAt.IsZero() {
		at = c.receivedAt
	}
	return copy(b, f), at, nil
}

func (c *frameConn) Close() error { return nil }

// recordingSender records the ARP replies the responder sends.
type recordingSender struct{ replies []*arp.Packet }

func (r *recordingSender) Reply(req *arp.Packet, mac net.HardwareAddr, ip netip.Addr) error {
	r.replies = append(r.replies, req)
	return nil
}

func (r *recordingSender) WriteTo(*arp.Packet, net.HardwareAddr) error { return nil }

// testARPProto is an ARP responder for vip4 on a fake socket.
func testARPProto(t testing.TB) (*arpProto, *frameConn, *recordingSender, *metrics) {
	t.Helper()
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, sender := &frameConn{}, &recordingSender{}
	spec := responderSpec{
		iface: "eth0", mac: ourMAC, proto: protoARP,
		owns: ownsOnly(vip4), announces: ownsOnly(vip4), yield: func(netip.Addr, net.HardwareAddr) {},
		sending: &sync.RWMutex{}, log: slog.New(slog.DiscardHandler), metrics: m,
	}
	spec.delays = newAnswerDelays(spec.log, m.answerDelay.WithLabelValues("eth0", protoARP))
	return &arpProto{spec: spec, conn: conn, frames: conn, client: sender}, conn, sender, m
}

// malformedARP returns frames mdlayher/arp cannot parse: protocol length
// 0, and truncated after the header or mid-address.
func malformedARP(t testing.TB) [][]byte {
	t.Helper()
	good := arpFrame(t, arpPacket(t, arp.OperationRequest, clientMAC, client4, net.HardwareAddr{0, 0, 0, 0, 0, 0}, vip4), ethernet.Broadcast)
	plen0 := bytes.Clone(good)
	plen0[ethHeaderLen+5] = 0
	return [][]byte{plen0, good[:ethHeaderLen+8], good[:ethHeaderLen+20], good[:10]}
}

// TestARPReadSkipsMalformed: a malformed frame is counted and skipped, the
// loop reads on without an error (no backoff), and the next request is
// answered. Through arp.Client.Read the same frames were read errors.
func TestARPReadSkipsMalformed(t *testing.T) {
	p, conn, sender, m := testARPProto(t)
	bad := malformedARP(t)
	conn.frames = append(bad, arpFrame(t, arpPacket(t, arp.OperationRequest, clientMAC, client4, net.HardwareAddr{0, 0, 0, 0, 0, 0}, vip4), ethernet.Broadcast))
	buf := make([]byte, arpReadBuffer)
	for i := range len(bad) + 1 {
		if err := p.readOne(context.Background(), buf); err != nil {
			t.Fatalf("frame %d: read error %v: a malformed frame would pause the read loop", i, err)
		}
	}
	if got := testutil.ToFloat64(m.malformed.WithLabelValues("eth0", protoARP)); got != float64(len(bad)) {
		t.Errorf("malformed frames counted %g, want %d", got, len(bad))
	}
	if len(sender.replies) != 1 || sender.replies[0].TargetIP != vip4 {
		t.Errorf("replies %+v, want one for %s", sender.replies, vip4)
	}
	if err := p.readOne(context.Background(), buf); !errors.Is(err, errClosedConn) {
		t.Errorf("socket error %v not returned", err)
	}
}

// TestARPReadLoopBacksOffOnlyOnSocketErrors runs the real loop over 1,000
// malformed frames then a request: it is answered at once (a backoff of
// 10 ms doubling per frame would take minutes).
func TestARPReadLoopBacksOffOnlyOnSocketErrors(t *testing.T) {
	p, conn, sender, _ := testARPProto(t)
	bad := malformedARP(t)
	for i := range 1000 {
		conn.frames = append(conn.frames, bad[i%len(bad)])
	}
	conn.frames = append(conn.frames, arpFrame(t, arpPacket(t, arp.OperationRequest, clientMAC, client4, net.HardwareAddr{0, 0, 0, 0, 0, 0}, vip4), ethernet.Broadcast))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.readLoop(ctx); close(done) }()
	deadline := time.Now().Add(5 * time.Second)
	for len(conn.framesLeft()) > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	if n := len(conn.framesLeft()); n > 0 || len(sender.replies) != 1 {
		t.Fatalf("%d frames still unread and %d replies after 5 s: the loop paused on malformed frames", n, len(sender.replies))
	}
}

// FuzzARPReadPath feeds arbitrary frames to the responder's read path, the
// one the socket loop runs: it must never return an error for a frame (only
// the socket's errors pause the loop), must count exactly the frames that
// do not parse, and may answer only a who-has for an owned VIP.
func FuzzARPReadPath(f *testing.F) {
	for _, b := range malformedARP(f) {
		f.Add(b)
	}
	zero := net.HardwareAddr{0, 0, 0, 0, 0, 0}
	f.Add(arpFrame(f, arpPacket(f, arp.OperationRequest, clientMAC, client4, zero, vip4), ethernet.Broadcast))
	f.Add(arpFrame(f, arpPacket(f, arp.OperationReply, otherMAC, vip4, ethernet.Broadcast, vip4), ethernet.Broadcast))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, conn, sender, m := testARPProto(t)
		conn.frames = [][]byte{b}
		buf := make([]byte, arpReadBuffer)
		if err := p.readOne(context.Background(), buf); err != nil {
			t.Fatalf("read error %v for a frame: it would pause the read loop", err)
		}
		read := b[:min(len(b), arpReadBuffer)]
		_, fr, perr := parseARPFrame(read)
		malformed := testutil.ToFloat64(m.malformed.WithLabelValues("eth0", protoARP))
		if (perr != nil) != (malformed == 1) {
			t.Fatalf("parse error %v, malformed counted %g", perr, malformed)
		}
		for _, r := range sender.replies {
			if r.Operation != arp.OperationRequest || r.TargetIP != vip4 || bytes.Equal(r.SenderHardwareAddr, ourMAC) ||
				!bytes.Equal(fr.Destination, ethernet.Broadcast) && !bytes.Equal(fr.Destination, ourMAC) {
				t.Fatalf("answered %+v in %+v", r, fr)
			}
		}
	})
}

// TestAnswerDelayFromKernelReceiveTime: the delay of an answer counts from
// when the kernel received the request, so a request that waited 300 ms in
// the socket is observed as a 300 ms answer and reported, once per
// lateReportEvery however many late answers follow.
func TestAnswerDelayFromKernelReceiveTime(t *testing.T) {
	p, conn, sender, m := testARPProto(t)
	var logged bytes.Buffer
	p.spec.delays.log = slog.New(slog.NewTextHandler(&logged, nil))
	req := arpFrame(t, arpPacket(t, arp.OperationRequest, clientMAC, client4, net.HardwareAddr{0, 0, 0, 0, 0, 0}, vip4), ethernet.Broadcast)
	buf := make([]byte, arpReadBuffer)

	conn.frames = [][]byte{req}
	if err := p.readOne(context.Background(), buf); err != nil {
		t.Fatal(err)
	}
	conn.receivedAt = time.Now().Add(-300 * time.Millisecond)
	conn.frames = [][]byte{req, req}
	for range 2 {
		if err := p.readOne(context.Background(), buf); err != nil {
			t.Fatal(err)
		}
	}
	if len(sender.replies) != 3 {
		t.Fatalf("%d replies, want 3", len(sender.replies))
	}
	h := m.answerDelay.WithLabelValues("eth0", protoARP).(prometheus.Histogram)
	var pb dto.Metric
	if err := h.Write(&pb); err != nil {
		t.Fatal(err)
	}
	hist := pb.GetHistogram()
	if hist.GetSampleCount() != 3 {
		t.Errorf("%d delays observed, want 3", hist.GetSampleCount())
	}
	for _, b := range hist.GetBucket() {
		if b.GetUpperBound() == 0.25 && b.GetCumulativeCount() != 1 {
			t.Errorf("%d answers within 250 ms, want 1 (the other two waited 300 ms in the socket)", b.GetCumulativeCount())
		}
	}
	if n := strings.Count(logged.String(), "answers sent late"); n != 1 {
		t.Errorf("late answers reported %d times, want once:\n%s", n, logged.String())
	}
	if !strings.Contains(logged.String(), "late=1") {
		t.Errorf("report does not count the first late answer:\n%s", logged.String())
	}
}

// recordingNDPConn records the NDP messages the responder sends.
type recordingNDPConn struct{ sent []ndp.Message }

func (c *recordingNDPConn) WriteTo(m ndp.Message, _ *ipv6.ControlMessage, _ netip.Addr) error {
	c.sent = append(c.sent, m)
	return nil
}
func (c *recordingNDPConn) JoinGroup(netip.Addr) error  { return nil }
func (c *recordingNDPConn) LeaveGroup(netip.Addr) error { return nil }
func (c *recordingNDPConn) Close() error                { return nil }

// TestNDPHandOverInArrivalOrder: for a VIP being released, a solicitation
// read before the new owner's unsolicited NA is answered and one read after
// it is not, because both come from the same socket in the order the
// interface received them (with the NA on a socket of its own, a
// solicitation queued before it could be read after it and go unanswered
// by both nodes).
func TestNDPHandOverInArrivalOrder(t *testing.T) {
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	var answering atomic.Bool
	answering.Store(true)
	var yieldedTo []net.HardwareAddr
	owns := func(a netip.Addr) bool { return a == vip6 && answering.Load() }
	spec := responderSpec{
		iface: "eth0", mac: ourMAC, proto: protoNDP,
		owns: owns, announces: ownsOnly(vip6),
		yield: func(vip netip.Addr, by net.HardwareAddr) {
			yieldedTo = append(yieldedTo, by)
			answering.Store(false)
		},
		sending: &sync.RWMutex{}, log: slog.New(slog.DiscardHandler), metrics: m,
	}
	spec.delays = newAnswerDelays(spec.log, m.answerDelay.WithLabelValues("eth0", protoNDP))
	snm, _ := ndp.SolicitedNodeMulticast(vip6)
	mcastMAC := net.HardwareAddr{0x33, 0x33, 0xff, 0, 0, 0x70}
	ns := nsBytes(t, clientMAC, mcastMAC, client6, snm, vip6, 255)
	frames := &frameConn{frames: [][]byte{ns, unsolicitedNABytes(t, otherMAC, vip6), ns}}
	conn := &recordingNDPConn{}
	p := &ndpProto{spec: spec, conn: conn, frames: frames, mtu: 1500}
	buf := make([]byte, p.mtu+ethHeaderLen)
	for range 3 {
		if err := p.readOne(context.Background(), buf); err != nil {
			t.Fatal(err)
		}
	}
	if len(yieldedTo) != 1 || !bytes.Equal(yieldedTo[0], otherMAC) {
		t.Errorf("yielded to %v, want once to %s", yieldedTo, otherMAC)
	}
	if len(conn.sent) != 1 {
		t.Fatalf("sent %d advertisements, want 1 (the solicitation before the hand-over)", len(conn.sent))
	}
	if na, ok := conn.sent[0].(*ndp.NeighborAdvertisement); !ok || !na.Solicited || na.TargetAddress != vip6 {
		t.Errorf("sent %+v, want a solicited NA for %s", conn.sent[0], vip6)
	}
}

// TestAnnouncementToOurMACIsANotice: another host's gratuitous ARP or
// unsolicited NA sent to our MAC alone is a fence loser's notice (it only
// fences), one sent to everyone is an announcement (it may end a
// hand-over); the two never swap.
func TestAnnouncementToOurMACIsANotice(t *testing.T) {
	type call struct{ kind, proto string }
	var calls []call
	record := func(kind, proto string) func(netip.Addr, net.HardwareAddr) {
		return func(netip.Addr, net.HardwareAddr) { calls = append(calls, call{kind, proto}) }
	}
	arpP, arpConn, _, _ := testARPProto(t)
	arpP.spec.yield, arpP.spec.notice = record("yield", protoARP), record("notice", protoARP)
	garp := arpPacket(t, arp.OperationReply, otherMAC, vip4, ethernet.Broadcast, vip4)
	arpConn.frames = [][]byte{arpFrame(t, garp, ourMAC), arpFrame(t, garp, ethernet.Broadcast)}
	buf := make([]byte, 2048)
	for range 2 {
		if err := arpP.readOne(context.Background(), buf); err != nil {
			t.Fatal(err)
		}
	}
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	ll := netip.MustParseAddr("fe80::ff:fe00:99")
	na := unsolicitedNA(vip6, false, true, tll(otherMAC))
	frames := &frameConn{frames: [][]byte{
		ndpBytes(t, otherMAC, ourMAC, ll, netip.IPv6LinkLocalAllNodes(), na, 255),
		unsolicitedNABytes(t, otherMAC, vip6),
	}}
	ndpP := &ndpProto{spec: responderSpec{iface: "eth0", mac: ourMAC, proto: protoNDP, owns: ownsOnly(vip6), announces: ownsOnly(vip6),
		yield: record("yield", protoNDP), notice: record("notice", protoNDP), sending: &sync.RWMutex{},
		log: slog.New(slog.DiscardHandler), metrics: m}, conn: &recordingNDPConn{}, frames: frames, mtu: 1500}
	for range 2 {
		if err := ndpP.readOne(context.Background(), buf); err != nil {
			t.Fatal(err)
		}
	}
	want := []call{{"notice", protoARP}, {"yield", protoARP}, {"notice", protoNDP}, {"yield", protoNDP}}
	if !slices.Equal(calls, want) {
		t.Errorf("calls %v, want %v", calls, want)
	}
}

// TestRequestBeforeOurAnnouncementIsLeftToThePreviousOwner: a new owner
// does not answer a request the kernel received before its first
// gratuitous packet (the previous owner answers that one), and answers one
// received after it; with the answering carried over (no announcement
// time) it answers both.
func TestRequestBeforeOurAnnouncementIsLeftToThePreviousOwner(t *testing.T) {
	announced := time.Now()
	req := arpFrame(t, arpPacket(t, arp.OperationRequest, clientMAC, client4, net.HardwareAddr{0, 0, 0, 0, 0, 0}, vip4), ethernet.Broadcast)
	for _, c := range []struct {
		name     string
		from     time.Time
		received time.Time
		answered int
	}{
		{"received before our announcement", announced, announced.Add(-time.Millisecond), 0},
		{"received after it", announced, announced.Add(time.Millisecond), 1},
		{"answering carried over", time.Time{}, announced.Add(-time.Millisecond), 1},
	} {
		p, conn, sender, _ := testARPProto(t)
		p.spec.answersFrom = func(netip.Addr) time.Time { return c.from }
		conn.frames, conn.receivedAt = [][]byte{req}, c.received
		if err := p.readOne(context.Background(), make([]byte, 2048)); err != nil {
			t.Fatal(err)
		}
		if len(sender.replies) != c.answered {
			t.Errorf("%s: %d replies, want %d", c.name, len(sender.replies), c.answered)
		}
	}
}
