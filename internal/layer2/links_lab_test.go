package layer2

import (
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// TestLabLinkChanges checks that the announcer follows its interfaces
// without a restart: an IPv4 address added after the VIP was set, the link
// going down (nothing announced), and up again (answers again, new
// gratuitous ARP, NDP responder reopened once the new link-local address
// has passed DAD, the IPv6 address put back after link-up followed).
func TestLabLinkChanges(t *testing.T) {
	l := newLab(t, "arping")
	node := l.addHost("node1", macNode1, true, "2001:db8:1::11/64")
	client := l.addHost("client", macClient, false, client4IP+"/25", "2001:db8:1::100/64")
	cli := startHelper(t, client, "client")
	cli.expect("ready")
	ann := startHelper(t, node, "announcer")
	o := &oneNode{lab: l, node: node, client: client, ann: ann, cli: cli}

	ann.set(labVIP4, labVIP6)
	labkit.Eventually(t, 10*time.Second, "IPv6 VIP announced", func() bool { return ann.ifaces(labVIP6) == "eth0" })
	if got := ann.ifaces(labVIP4); got != "" {
		t.Fatalf("IPv4 VIP announced on %q with no IPv4 address on the node", got)
	}

	l.AddAddr(node, "198.51.100.11/25")
	labkit.Eventually(t, 5*time.Second, "IPv4 VIP announced after the address was added", func() bool {
		return ann.ifaces(labVIP4) == "eth0"
	})
	if ok, out := o.arping(labVIP4, 1); !ok {
		t.Fatalf("arping after the address was added:\n%s", out)
	}

	l.IP(node, "link", "set", "eth0", "down")
	labkit.Eventually(t, 5*time.Second, "nothing announced on a down link", func() bool {
		return ann.ifaces(labVIP4) == "" && ann.ifaces(labVIP6) == ""
	})

	m := cli.mark()
	up := time.Now()
	l.IP(node, "link", "set", "eth0", "up")
	// Link down removed the IPv6 global address (keep_addr_on_down=0);
	// the network configuration puts it back, as networkd would.
	l.AddAddr(node, "2001:db8:1::11/64")
	labkit.Eventually(t, 5*time.Second, "VIPs announced again", func() bool {
		return ann.ifaces(labVIP4) == "eth0" && ann.ifaces(labVIP6) == "eth0"
	})
	g := cli.waitFrame(m, 5*time.Second, "gratuitous ARP after link up", isGARP(macNode1, labVIP4))
	na := cli.waitFrame(m, 10*time.Second, "unsolicited NA after link up", isUnsolicitedNA(macNode1, labVIP6))
	t.Logf("after link up: gratuitous ARP %v, unsolicited NA %v (NDP waits for the link-local DAD)",
		g.time().Sub(up).Round(time.Millisecond), na.time().Sub(up).Round(time.Millisecond))
	if ok, out := o.arping(labVIP4, 1); !ok {
		t.Fatalf("arping after link up:\n%s", out)
	}
	l.IP(client, "-6", "neigh", "flush", "dev", "eth0")
	_, _ = l.Exec(client, "ping", "-6", "-c", "1", "-W", "1", labVIP6)
	labkit.Eventually(t, 5*time.Second, "client resolves the IPv6 VIP after link up", func() bool {
		return strings.Contains(l.neigh(client, labVIP6), "lladdr "+macNode1)
	})
}
