package layer2

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

const (
	labVIP4   = "198.51.100.70"
	labVIP6   = "2001:db8:1::70"
	client4IP = "198.51.100.100"
	broadcast = "ff:ff:ff:ff:ff:ff"
)

// oneNode is the common lab: node1 (the announcer, IPv6 DAD on as on a real
// node) and a client, both with IPv4 and IPv6 on the bridge.
type oneNode struct {
	*lab
	node, client string
	ann, cli     *helper
}

func newOneNode(t testing.TB, tools ...string) *oneNode {
	l := newLab(t, tools...)
	o := &oneNode{lab: l}
	o.node = l.addHost("node1", macNode1, true, "198.51.100.11/25", "2001:db8:1::11/64")
	o.client = l.addHost("client", macClient, false, client4IP+"/25", "2001:db8:1::100/64")
	o.cli = startHelper(t, o.client, "client")
	o.cli.expect("ready")
	o.ann = startHelper(t, o.node, "announcer")
	return o
}

// arping sends count who-has requests from the client and reports whether
// any was answered, with arping's output.
func (o *oneNode) arping(ip string, count int) (bool, string) {
	out, err := o.Exec(o.client, "arping", "-c", strconv.Itoa(count), "-w", strconv.Itoa(count+1), "-I", "eth0", ip)
	return err == nil && strings.Contains(out, "reply from "+ip), out
}

func isARPReply(from, ip string) func(frame) bool {
	return func(f frame) bool { return f.Kind == "arp-reply" && f.Src == from && f.SPA == ip }
}

func isGARP(from, ip string) func(frame) bool {
	return func(f frame) bool {
		return f.Kind == "arp-reply" && f.Src == from && f.Dst == broadcast && f.SPA == ip && f.TPA == ip
	}
}

func countFrames(frames []frame, pred func(frame) bool) int {
	n := 0
	for _, f := range frames {
		if pred(f) {
			n++
		}
	}
	return n
}

func TestLabARP(t *testing.T) {
	o := newOneNode(t, "arping")
	m := o.cli.mark()
	o.ann.set(labVIP4)
	labkit.Eventually(t, 10*time.Second, "VIP announced on eth0", func() bool { return o.ann.ifaces(labVIP4) == "eth0" })
	o.cli.waitFrame(m, 5*time.Second, "gratuitous ARP", isGARP(macNode1, labVIP4))

	// Broadcast request, then (iputils arping switches after a reply) a
	// unicast one: both answered with node1's MAC.
	m = o.cli.mark()
	ok, out := o.arping(labVIP4, 2)
	if !ok || !strings.Contains(out, "["+strings.ToUpper(macNode1)+"]") || !strings.Contains(out, "Received 2 response(s)") {
		t.Fatalf("arping %s: not answered twice by %s:\n%s", labVIP4, macNode1, out)
	}
	// arping returns on the answer; the client's capture may report the
	// frames later on a busy machine.
	o.cli.waitFrame(m, 5*time.Second, "unicast ARP request from arping", func(f frame) bool {
		return f.Kind == "arp-request" && f.Dst == macNode1 && f.TPA == labVIP4
	})

	// An address not owned is not answered. The answer to the owned VIP
	// requested next proves the responder has handled the first request.
	m = o.cli.mark()
	if ok, out := o.arping("198.51.100.71", 1); ok {
		t.Fatalf("arping of an address not announced was answered:\n%s", out)
	}
	if ok, out := o.arping(labVIP4, 1); !ok {
		t.Fatalf("arping %s:\n%s", labVIP4, out)
	}
	// The capture reports frames in order: once it has the later answer, it
	// has every frame before it.
	o.cli.waitFrame(m, 5*time.Second, "ARP reply for "+labVIP4, isARPReply(macNode1, labVIP4))
	if n := countFrames(o.cli.framesSince(m), isARPReply(macNode1, "198.51.100.71")); n != 0 {
		t.Fatalf("%d replies for an address not announced", n)
	}

	// The client's kernel resolves the VIP (broadcast, then unicast probes
	// when the entry is checked again).
	_, _ = o.Exec(o.client, "ping", "-c", "1", "-W", "1", labVIP4)
	labkit.Eventually(t, 5*time.Second, "client neighbour entry with node1's MAC", func() bool {
		return strings.Contains(o.neigh(o.client, labVIP4), "lladdr "+macNode1)
	})

	checkWithdrawARP(t, o)
	checkARPMetrics(t, o)
}

// checkWithdrawARP removes the VIP (keeping another) and then everything:
// requests stop being answered at once.
func checkWithdrawARP(t *testing.T, o *oneNode) {
	const other = "198.51.100.72"
	o.ann.set(other)
	m := o.cli.mark()
	if ok, out := o.arping(labVIP4, 1); ok {
		t.Fatalf("withdrawn VIP still answered:\n%s", out)
	}
	if ok, out := o.arping(other, 1); !ok {
		t.Fatalf("arping %s:\n%s", other, out)
	}
	o.cli.waitFrame(m, 5*time.Second, "ARP reply for "+other, isARPReply(macNode1, other))
	if n := countFrames(o.cli.framesSince(m), isARPReply(macNode1, labVIP4)); n != 0 {
		t.Fatalf("%d replies for a withdrawn VIP", n)
	}
	o.ann.set()
	if got := o.ann.ifaces(other); got != "" {
		t.Fatalf("Interfaces after SetAnnouncements(nil) = %q", got)
	}
	if ok, out := o.arping(other, 1); ok {
		t.Fatalf("answered after SetAnnouncements(nil):\n%s", out)
	}
}

func checkARPMetrics(t *testing.T, o *oneNode) {
	for name, min := range map[string]float64{
		"herald_l2_requests_received_total": 4,
		"herald_l2_responses_sent_total":    4,
		"herald_l2_gratuitous_sent_total":   1,
	} {
		if v := o.ann.metric(name, "eth0", protoARP); v < min {
			t.Errorf("%s{interface=eth0,protocol=arp} = %g, want >= %g", name, v, min)
		}
	}
}
