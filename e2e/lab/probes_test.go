package lab_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/lab"
)

// holdAddress makes a node's kernel answer for a VIP, standing in for a
// speaker: an IPv4 /32 on lo (arp_ignore=0 answers on eth0), an IPv6
// /128 on eth0 (the kernel answers NS only where the address is).
func holdAddress(t *testing.T, l *lab.Lab, node string, vip netip.Addr) {
	t.Helper()
	dev := "lo"
	if vip.Is6() {
		dev = "eth0"
	}
	ctx := ctxFor(t, time.Minute)
	p := netip.PrefixFrom(vip, vip.BitLen()).String()
	if _, err := l.Exec(ctx, node, "ip", "addr", "add", p, "dev", dev, "nodad"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = l.Exec(context.Background(), node, "ip", "addr", "del", p, "dev", dev) })
}

func answerNodes(as []lab.Answer) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Node)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func TestARPAndNDPProbes(t *testing.T) {
	l := lab.Shared(t)
	ctx := ctxFor(t, time.Minute)
	node2, _ := l.Node("node2")
	got, err := l.ARPProbe(ctx, node2.IPv4)
	if err != nil || fmt.Sprint(answerNodes(got)) != "[node2]" || got[0].MAC.String() != node2.MAC.String() {
		t.Errorf("ARP probe of node2: %+v %v", got, err)
	}
	if got, err := l.ARPProbe(ctx, addr("198.51.100.90")); err != nil || len(got) != 0 {
		t.Errorf("ARP probe of a free address: %+v %v", got, err)
	}
	for _, unicast := range []bool{false, true} {
		got, err := l.NDPProbe(ctx, node2.IPv6, unicast)
		if err != nil || fmt.Sprint(answerNodes(got)) != "[node2]" || !got[0].Solicited {
			t.Errorf("NDP probe (unicast %v) of node2: %+v %v", unicast, got, err)
		}
	}
	// two holders of one address: both answers are reported
	vip := addr("198.51.100.91")
	holdAddress(t, l, "node1", vip)
	holdAddress(t, l, "node3", vip)
	if got, err := l.ARPProbe(ctx, vip); err != nil || fmt.Sprint(answerNodes(got)) != "[node1 node3]" {
		t.Errorf("ARP probe of a doubly held address: %+v %v", got, err)
	}
}

// The monitor sees an address go from unanswered to answered by node2 and
// then to answered by two MACs; the watcher sees node3's gratuitous ARP
// and unsolicited NA.
func TestMonitorAndGratuitousWatch(t *testing.T) {
	l := lab.Shared(t)
	ctx := ctxFor(t, time.Minute)
	for _, vip := range []netip.Addr{addr("198.51.100.92"), addr("2001:db8:1::72")} {
		t.Run(vip.String(), func(t *testing.T) {
			start := l.StartARPMonitor
			if vip.Is6() {
				start = l.StartNDPMonitor
			}
			mon, err := start(vip, 20*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			defer mon.Stop()
			if _, err := mon.Wait(ctx, time.Time{}, func(p lab.Probe) bool { return p.Seq >= 3 }); err != nil {
				t.Fatal(err)
			}
			held := time.Now()
			holdAddress(t, l, "node2", vip)
			first, err := mon.Wait(ctx, held, lab.Probe.Answered)
			if err != nil {
				t.Fatal(err)
			}
			doubled := time.Now()
			holdAddress(t, l, "node3", vip)
			if _, err := mon.Wait(ctx, doubled, func(p lab.Probe) bool { return len(p.MACs()) == 2 }); err != nil {
				t.Fatal(err)
			}
			log, err := mon.Stop()
			if err != nil {
				t.Fatal(err)
			}
			gap, n := log.LongestGap()
			before := log.Between(time.Time{}, held)
			t.Logf("%d probes; first answer %v after the address appeared (%v); longest gap %v (%d probes); %d conflicting",
				len(log), first.Answers[0].At.Sub(held).Round(time.Millisecond), first.Nodes(), gap.Round(time.Millisecond), n, len(log.Conflicts()))
			if len(before) < 3 || len(before.Unanswered()) != len(before) {
				t.Errorf("before: %d probes, %d unanswered", len(before), len(before.Unanswered()))
			}
			if fmt.Sprint(first.Nodes()) != "[node2]" || len(log.Conflicts()) == 0 {
				t.Errorf("first answered probe %+v, conflicts %d", first, len(log.Conflicts()))
			}
			if p, ok := log.After(held).FirstAnswered("node2"); !ok || p.Seq != first.Seq {
				t.Errorf("FirstAnswered(node2) = %+v %v", p, ok)
			}
		})
	}
}

func TestGratuitousWatch(t *testing.T) {
	l := lab.Shared(t)
	ctx := ctxFor(t, time.Minute)
	w, err := l.WatchGratuitous()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	sent := time.Now()
	for _, vip := range []netip.Addr{addr("198.51.100.93"), addr("2001:db8:1::73")} {
		if err := l.Announce(ctx, "node3", vip); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "both announcements seen", func() error {
		if len(w.Announcements()) < 2 {
			return fmt.Errorf("%d seen", len(w.Announcements()))
		}
		return nil
	})
	all, err := w.Stop()
	if err != nil {
		t.Fatal(err)
	}
	v4, ok4 := all.First(addr("198.51.100.93"), "node3", sent)
	v6, ok6 := all.First(addr("2001:db8:1::73"), "node3", sent)
	if !ok4 || v4.Kind != "garp-request" || !ok6 || v6.Kind != "unsolicited-na" || !v6.Override || v6.Dst != addr("ff02::1") {
		t.Errorf("announcements: %+v", all)
	}
}
