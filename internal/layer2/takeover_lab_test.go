package layer2

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// TestLabTakeover moves an IPv4 and an IPv6 VIP from node1 to node2 the way
// the speaker does on failover (node1 withdraws, node2 announces) and checks
// that the gratuitous ARP and unsolicited NA move the client's existing
// neighbour entries to node2's MAC, with no traffic from the client, and
// that node1 sends nothing for the VIPs once it has withdrawn them.
func TestLabTakeover(t *testing.T) {
	l := newLab(t)
	node1 := l.addHost("node1", macNode1, true, "198.51.100.11/25", "2001:db8:1::11/64")
	node2 := l.addHost("node2", macNode2, true, "198.51.100.12/25", "2001:db8:1::12/64")
	client := l.addHost("client", macClient, false, client4IP+"/25", "2001:db8:1::100/64")
	cli := startHelper(t, client, "client")
	cli.expect("ready")
	ann1 := startHelper(t, node1, "announcer")
	ann2 := startHelper(t, node2, "announcer")

	m := cli.mark()
	ann1.set(labVIP4, labVIP6)
	cli.waitFrame(m, 10*time.Second, "node1's unsolicited NA", isUnsolicitedNA(macNode1, labVIP6))
	for _, vip := range []string{labVIP4, labVIP6} {
		fam := "-4"
		if strings.Contains(vip, ":") {
			fam = "-6"
		}
		_, _ = l.Exec(client, "ping", fam, "-c", "1", "-W", "1", vip)
		labkit.Eventually(t, 5*time.Second, "client entry for "+vip+" with node1's MAC", func() bool {
			return strings.Contains(l.neigh(client, vip), "lladdr "+macNode1)
		})
	}
	// The unsolicited NA is checked against a STALE entry, as after a
	// while without traffic.
	l.IP(client, "-6", "neigh", "change", labVIP6, "dev", "eth0", "lladdr", macNode1, "nud", "stale")
	// node2's NDP responder needs its link-local out of DAD: have it ready
	// with another VIP before the takeover, as a running node would.
	m = cli.mark()
	ann2.set("2001:db8:1::99")
	cli.waitFrame(m, 10*time.Second, "node2's NDP responder ready", isUnsolicitedNA(macNode2, "2001:db8:1::99"))

	m = cli.mark()
	_, _, sentBefore := ann1.setCounted()
	t0 := ann2.set(labVIP4, labVIP6, "2001:db8:1::99")
	for _, vip := range []string{labVIP4, labVIP6} {
		labkit.Eventually(t, 10*time.Second, "client entry for "+vip+" moved to node2", func() bool {
			return strings.Contains(l.neigh(client, vip), "lladdr "+macNode2)
		})
		t.Logf("%s: client entry moved to node2 %v after SetAnnouncements (%s)",
			vip, time.Since(t0).Round(time.Millisecond), l.neigh(client, vip))
	}
	// The burst repeats, to beat the ARP locktime of a recently updated entry.
	labkit.Eventually(t, 5*time.Second, "a second gratuitous ARP", func() bool {
		return countFrames(cli.framesSince(m), isGARP(macNode2, labVIP4)) >= 2
	})
	// node1's first burst was still running when it withdrew. Nothing it
	// sends after SetAnnouncements returns may be for a VIP: its counters
	// stand still, and the client never sees more of its frames for the
	// VIPs than it had counted then. (Arrival times prove nothing: a busy
	// machine defers the bridge's forwarding by any amount.)
	if n := ann1.sent() - sentBefore; n != 0 {
		t.Errorf("node1 sent %d ARP replies or NAs after withdrawing", n)
	}
	if n := countFrames(cli.framesSince(frameMark{}), isAnswerFrom(macNode1, labVIP4, labVIP6)); n > sentBefore {
		t.Errorf("the client saw %d ARP replies or NAs for the VIPs from node1, which had sent %d when it withdrew", n, sentBefore)
	}
	labkit.Eventually(t, 5*time.Second, "node2's herald_l2_gratuitous_sent_total{protocol=ndp} >= 2", func() bool {
		return ann2.metric("herald_l2_gratuitous_sent_total", "eth0", protoNDP) >= 2
	})
}

// isAnswerFrom matches an ARP reply (gratuitous or not) or a neighbour
// advertisement from mac for one of vips.
func isAnswerFrom(mac string, vips ...string) func(frame) bool {
	return func(f frame) bool {
		return f.Src == mac && (f.Kind == "arp-reply" && slices.Contains(vips, f.SPA) ||
			f.Kind == "na" && slices.Contains(vips, f.Target))
	}
}
