package layer2

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"

	"github.com/herald-lb/herald/test/labkit"
)

func BenchmarkChooseInterfaces(b *testing.B) {
	var links []Link
	for i := range 64 {
		links = append(links, link(i+1, fmt.Sprintf("eth%d", i), fmt.Sprintf("10.%d.0.1/24", i), fmt.Sprintf("2001:db8:%x::1/64", i), ll))
	}
	vip := netip.MustParseAddr("10.63.0.70")
	exclude := DefaultExcludeInterfaces()
	for b.Loop() {
		ChooseInterfaces(links, DefaultRoutes{V4: []int{1}}, vip, nil, exclude)
	}
}

// BenchmarkARPDecision is the per-packet cost of "is this request for us"
// against an ownership snapshot of 1000 VIPs.
func BenchmarkARPDecision(b *testing.B) {
	a, _, _ := testAnnouncer(b, Config{})
	a.publish(node(true).snapshot())
	a.SetAnnouncements(manyVIPs(1000))
	req := arpPacket(b, arp.OperationRequest, clientMAC, client4, ethernet.Broadcast, netip.MustParseAddr("198.51.100.99"))
	owns := func(vip netip.Addr) bool { return a.owns("eth0", vip) }
	for b.Loop() {
		if _, ok := arpRequestFor(req, ethernet.Broadcast, ourMAC, owns); !ok {
			b.Fatal("not answered")
		}
	}
}

func BenchmarkParseNDPFrame(b *testing.B) {
	f := nsBytes(b, clientMAC, ourMAC, client6, vip6, vip6, 255)
	for b.Loop() {
		if _, err := parseNDPFrame(f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSetAnnouncementsSame is the cost of calling SetAnnouncements
// again with the same 1000 VIPs.
func BenchmarkSetAnnouncementsSame(b *testing.B) {
	a, _, _ := testAnnouncer(b, Config{})
	a.publish(node(true).snapshot())
	want := manyVIPs(1000)
	a.SetAnnouncements(want)
	for b.Loop() {
		a.SetAnnouncements(want)
	}
}

// BenchmarkSetAnnouncementsChange is the cost of a reconcile where one of
// 1000 VIPs moves away and back (fake responders: no sockets).
func BenchmarkSetAnnouncementsChange(b *testing.B) {
	a, f, _ := testAnnouncer(b, Config{})
	a.publish(node(true).snapshot())
	all := manyVIPs(1000)
	for b.Loop() {
		a.SetAnnouncements(all[1:])
		a.SetAnnouncements(all)
		f.take()
	}
}

func manyVIPs(n int) []Announcement {
	var out []Announcement
	for i := range n {
		if i%2 == 0 {
			out = append(out, Announcement{IP: netip.AddrFrom4([4]byte{198, 51, 100, byte(i / 2 % 128)})})
		} else {
			out = append(out, Announcement{IP: netip.MustParseAddr(fmt.Sprintf("2001:db8:1::%x", i))})
		}
	}
	return out
}

// BenchmarkLabTakeoverARP measures, in the lab with the client asking
// every millisecond, the time from SetAnnouncements to the first gratuitous
// ARP and to the first answered request seen by the client. "warm": the
// interface's ARP responder is already open for another VIP; "cold": the
// takeover opens it.
func BenchmarkLabTakeoverARP(b *testing.B) {
	for _, mode := range []string{"warm", "cold"} {
		b.Run(mode, func(b *testing.B) {
			o := newOneNode(b)
			const vip = "198.51.100.73"
			var base []string
			if mode == "warm" {
				base = []string{labVIP4}
			}
			o.ann.set(labVIP4)
			labkit.Eventually(b, 10*time.Second, "announcer running", func() bool { return o.ann.ifaces(labVIP4) == "eth0" })
			o.ann.set(base...)
			o.cli.call("probe %s 1ms", vip)
			defer o.cli.call("stop")
			var garp, answer time.Duration
			n := 0
			for b.Loop() {
				g, r := takeoverRound(b, o, append(base, vip), vip)
				garp, answer, n = garp+g, answer+r, n+1
				o.ann.set(base...)
			}
			b.ReportMetric(float64(garp.Microseconds())/float64(n), "µs-to-garp")
			b.ReportMetric(float64(answer.Microseconds())/float64(n), "µs-to-answer")
		})
	}
}

func takeoverRound(b *testing.B, o *oneNode, set []string, vip string) (garp, answer time.Duration) {
	m := o.cli.mark()
	t0 := o.ann.set(set...)
	// Frames reach the parent through a pipe: one read before t0 can still
	// arrive after the mark.
	after := func(f frame) bool { return f.T >= t0.UnixNano() }
	g := o.cli.waitFrame(m, 5*time.Second, "gratuitous ARP", func(f frame) bool {
		return after(f) && isGARP(macNode1, vip)(f)
	})
	r := o.cli.waitFrame(m, 5*time.Second, "answer", func(f frame) bool {
		return after(f) && isARPReply(macNode1, vip)(f) && f.TPA == client4IP
	})
	return g.time().Sub(t0), r.time().Sub(t0)
}
