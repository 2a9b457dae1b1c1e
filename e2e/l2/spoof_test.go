package l2

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/internal/layer2"
	"github.com/herald-lb/herald/test/labkit"
)

// TestForeignHostCannotSilenceTheOwner: a host on the segment that runs
// no speaker (the client) claims an IPv4 address with one gratuitous ARP
// from a made-up MAC that outranks the owner's in the fence, and then
// answers the speakers' ARP probes for it (the fence's verification), and
// nothing else. Before, the owner yielded to it and stayed silent for as
// long as it kept answering: nobody answered the clients. Now the owner
// keeps answering every probe of the client (sent every 20 ms for 10 s,
// at most a short gap right after the forged frame), no other node
// answers, the owner stays the same, it counts the claim
// (herald_l2_foreign_claims_total) and reports it (Warning event
// ForeignAddressClaim on the Service).
func TestForeignHostCannotSilenceTheOwner(t *testing.T) {
	l, _ := suite.Herald(t)
	const name = "spoof-0"
	var vip netip.Addr
	for _, a := range services(t, l, "spoof", 1) {
		if a.Is4() {
			vip = a
		}
	}
	node := harness.Owner(t, l, vip)
	var ownerMAC net.HardwareAddr
	for _, n := range l.Nodes() {
		if n.Name == node {
			ownerMAC = n.MAC
		}
	}
	fake := outranking(t, vip, ownerMAC)
	t.Logf("%s is answered by %s (%s); the client claims it for %s", vip, node, ownerMAC, fake)
	before := nodeMetric(l, "herald_l2_foreign_claims_total", "")
	w, err := l.WatchGratuitous()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = w.Stop() }()
	m, err := l.StartMonitor(vip, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Wait(context.Background(), time.Time{}, lab.Probe.Answered); err != nil {
		t.Fatal(err)
	}
	// A claim younger than the fence's settle time (2 s) is a hand-over
	// in progress, which the fence leaves alone: attack a settled owner,
	// as on a long-lived address.
	_, _ = m.Wait(context.Background(), time.Now().Add(settledClaim), func(lab.Probe) bool { return true })
	start := time.Now()
	sp, err := l.StartSpoof(lab.Client, vip, fake)
	if err != nil {
		_, _ = m.Stop()
		t.Fatal(err)
	}
	_, _ = m.Wait(context.Background(), start.Add(10*time.Second), func(lab.Probe) bool { return true })
	end := time.Now()
	if err := sp.Stop(); err != nil {
		t.Error(err)
	}
	probes, err := m.Stop()
	if err != nil {
		t.Fatal(err)
	}
	during := probes.Between(start, end)
	lab.CheckServed(t, fmt.Sprintf("a foreign host claiming %s", vip), during, lab.Steady())
	byOwner := 0
	for _, p := range during {
		if nodes := p.Nodes(); len(nodes) > 0 && !slices.Equal(nodes, []string{node}) {
			t.Errorf("probe %d at %s answered by %v (MACs %v), want %s alone", p.Seq, p.Sent.Format("15:04:05.000"), nodes, p.MACs(), node)
		}
		if slices.Equal(p.Nodes(), []string{node}) {
			byOwner++
		}
	}
	t.Logf("%d of %d probes in %v answered by the owner %s", byOwner, len(during), end.Sub(start).Round(time.Millisecond), node)
	checkReasserted(t, w, vip, node, fake, start)
	if got := harness.Owner(t, l, vip); got != node {
		t.Errorf("%s answered by %s after the claim, want %s", vip, got, node)
	}
	labkit.Eventually(t, 30*time.Second, "the owner counting the foreign claim", func() bool {
		return nodeMetric(l, "herald_l2_foreign_claims_total", "")[node] > before[node]
	})
	waitEvent(t, l, name, "ForeignAddressClaim", fake.String(), vip.String())
}

// settledClaim is how long the owner has answered before the attack:
// longer than layer2.DefaultFenceSettle.
const settledClaim = layer2.DefaultFenceSettle + 2*time.Second

// checkReasserted fails unless the owner (node) announced vip again
// within a second of the foreign host's announcement (MAC fake), which
// the watch w saw after start.
func checkReasserted(t testing.TB, w *lab.GratuitousWatch, vip netip.Addr, node string, fake net.HardwareAddr, start time.Time) {
	t.Helper()
	anns, err := w.Stop()
	if err != nil {
		t.Fatal(err)
	}
	var forged time.Time
	for _, a := range anns.For(vip) {
		if a.At.After(start) && bytes.Equal(a.MAC, fake) {
			forged = a.At
			break
		}
	}
	if forged.IsZero() {
		t.Fatalf("the forged announcement of %s was not seen on the segment", vip)
	}
	again, ok := anns.First(vip, node, forged)
	if !ok || again.At.Sub(forged) > time.Second {
		t.Fatalf("%s did not announce %s again within 1 s of the forged announcement (%v, %v)", node, vip, ok, again.At.Sub(forged))
	}
	n := 0
	for _, a := range anns.For(vip) {
		if a.Node == node && !a.At.Before(forged) {
			n++
		}
	}
	t.Logf("%s announced %s again %v after the forged announcement; %d announcements by it since", node, vip, again.At.Sub(forged).Round(time.Microsecond), n)
}

// outranking returns a made-up, locally administered MAC that wins the
// fence for vip against mac (about every second MAC does).
func outranking(t testing.TB, vip netip.Addr, mac net.HardwareAddr) net.HardwareAddr {
	t.Helper()
	for i := range 1 << 16 {
		fake := net.HardwareAddr{0x02, 0x5f, 0x0f, 0x00, byte(i >> 8), byte(i)}
		if !layer2.FenceWins(vip, mac, fake) {
			return fake
		}
	}
	t.Fatalf("no MAC outranks %s for %s", mac, vip)
	return nil
}
