package layer2

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// fakeProto counts gratuitous packets per VIP, and records the questions
// (solicit) and give-ups it sends; while block is set, a send waits for it
// to be closed. While unopened is set its sockets do not exist yet, and
// every send is counted in early (a real protocol dereferenced nil).
type fakeProto struct {
	mu       sync.Mutex
	sent     map[netip.Addr]int
	asked    []netip.Addr
	gaveUpTo []string // "vip mac"
	block    chan struct{}
	into     chan struct{} // receives when a blocked send starts
	unopened atomic.Bool
	early    atomic.Int32
}

// sending counts a send made before the sockets were open.
func (p *fakeProto) sending() {
	if p.unopened.Load() {
		p.early.Add(1)
	}
}

func (p *fakeProto) open(*net.Interface) error              { return nil }
func (p *fakeProto) serve(context.Context, *sync.WaitGroup) {}
func (p *fakeProto) close()                                 {}
func (p *fakeProto) setVIPs([]netip.Addr)                   {}
func (p *fakeProto) notify(netip.Addr, net.HardwareAddr) error {
	p.sending()
	return nil
}

func (p *fakeProto) solicit(vip netip.Addr) error {
	p.sending()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, vip)
	return nil
}

func (p *fakeProto) giveUp(vip netip.Addr, to net.HardwareAddr) error {
	p.sending()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gaveUpTo = append(p.gaveUpTo, vip.String()+" "+to.String())
	return nil
}

// questions returns how many times solicit asked about vip.
func (p *fakeProto) questions(vip netip.Addr) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, v := range p.asked {
		if v == vip {
			n++
		}
	}
	return n
}

// giveUps returns the give-ups sent so far.
func (p *fakeProto) giveUps() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.gaveUpTo)
}

func (p *fakeProto) gratuitous(vip netip.Addr) error {
	p.sending()
	p.mu.Lock()
	block := p.block
	p.mu.Unlock()
	if block != nil {
		p.into <- struct{}{}
		<-block
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent[vip]++
	return nil
}

func (p *fakeProto) count(vip netip.Addr) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent[vip]
}

// testResponder returns an open responder on p sending bursts of count
// packets every interval, for VIPs that are all advertised.
func testResponder(t *testing.T, p *fakeProto, count int, interval time.Duration) *responder {
	t.Helper()
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &responder{
		spec: responderSpec{
			iface: "eth0", proto: protoARP, log: slog.New(slog.DiscardHandler), metrics: m,
			advertises: func(netip.Addr) bool { return true },
			announced:  func(netip.Addr) {},
			grat:       GratuitousConfig{Count: count, Interval: interval},
		},
		p:      p,
		log:    slog.New(slog.DiscardHandler),
		nudges: make(chan struct{}, 1),
		ready:  make(chan struct{}),
		bursts: map[netip.Addr]*burst{},
	}
	close(r.ready)
	r.ctx, r.cancel = context.WithCancel(context.Background())
	t.Cleanup(r.close)
	return r
}

// TestResponderSilence stops a burst in progress: no packet for the VIP
// after silence returns, while a burst for another VIP goes on.
func TestResponderSilence(t *testing.T) {
	p := &fakeProto{sent: map[netip.Addr]int{}}
	r := testResponder(t, p, 1000, time.Millisecond)
	r.announce(vip4)
	labkit.Eventually(t, 5*time.Second, "3 packets of the burst", func() bool { return p.count(vip4) >= 3 })
	r.silence(vip4)
	n := p.count(vip4)
	r.announce(vip6)
	labkit.Eventually(t, 5*time.Second, "20 packets of another burst", func() bool { return p.count(vip6) >= 20 })
	if got := p.count(vip4); got != n {
		t.Fatalf("%d packets when silenced, %d later", n, got)
	}
}

// TestResponderSilenceWaitsForSend: silence returns only once a packet
// being sent is out, so the caller knows none is in flight.
func TestResponderSilenceWaitsForSend(t *testing.T) {
	p := &fakeProto{sent: map[netip.Addr]int{}, block: make(chan struct{}), into: make(chan struct{}, 1)}
	r := testResponder(t, p, 5, time.Millisecond)
	r.announce(vip4)
	<-p.into
	done := make(chan struct{})
	go func() { r.silence(vip4); close(done) }()
	select {
	case <-done:
		t.Fatal("silence returned while a packet was being sent")
	case <-time.After(50 * time.Millisecond):
	}
	p.mu.Lock()
	close(p.block)
	p.block = nil
	p.mu.Unlock()
	<-done
	if got := p.count(vip4); got != 1 {
		t.Fatalf("%d packets sent, want the one in flight", got)
	}
}
