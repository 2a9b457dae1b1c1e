package layer2

import (
	"testing"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// TestLabMalformedARPBurst: while the client probes node1's VIPs every
// 2 ms, it broadcasts bursts of malformed ARP frames (protocol length 0,
// truncated after the header and mid-address), 20 every 5 ms. Every probe
// is answered; the frames are counted as malformed. Before the responder
// read its socket itself, each such frame was a read error and paused the
// ARP responder 10 ms to 1 s, and almost no probe was answered.
func TestLabMalformedARPBurst(t *testing.T) {
	l := newLab(t)
	node := l.addHost("node1", macNode1, true, "198.51.100.11/25", "2001:db8:1::11/64")
	client := l.addProbingClient()
	cli := startHelper(t, client, "client")
	cli.expect("ready")
	ann := startHelper(t, node, "announcer", "HERALD_L2_LOG=info")
	h := &handoverLab{lab: l, t: t, client: client, cli: cli, ann: [2]*helper{ann}, macs: [2]string{macNode1}}
	m := cli.mark()
	ann.set(labVIP4, labVIP6)
	cli.waitFrame(m, 10*time.Second, "node1's NDP responder ready", isUnsolicitedNA(macNode1, labVIP6))

	h.startProbing(0)
	if r := cli.call("garbage 5ms 20"); r != "garbage" {
		t.Fatalf("client: %q", r)
	}
	labkit.Eventually(t, 10*time.Second, "2,000 malformed frames read", func() bool {
		return ann.metric("herald_l2_malformed_frames_total", "eth0", protoARP) >= 2000
	})
	if r := cli.call("nogarbage"); r != "nogarbage" {
		t.Fatalf("client: %q", r)
	}
	c := countProbes(h.stopProbing())
	t.Logf("%d probes during the malformed bursts, %d unanswered, %g malformed frames counted", c.probes, c.unanswered, ann.metric("herald_l2_malformed_frames_total", "eth0", protoARP))
	if c.probes < 100 {
		t.Fatalf("only %d probes sent", c.probes)
	}
	if c.unanswered > 0 {
		t.Errorf("%d of %d probes unanswered during malformed ARP bursts", c.unanswered, c.probes)
	}
}
