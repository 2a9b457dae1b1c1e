package layer2

import (
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

func isUnsolicitedNA(from, target string) func(frame) bool {
	return func(f frame) bool {
		return f.Kind == "na" && f.Src == from && f.Target == target && !f.Solicited && f.Override &&
			f.IPDst == "ff02::1" && f.TLL == from
	}
}

func isSolicitedNA(from, target string) func(frame) bool {
	return func(f frame) bool {
		return f.Kind == "na" && f.Src == from && f.Target == target && f.Solicited && f.Override && f.TLL == from
	}
}

// ndisc6 sends one multicast solicitation from the client. Its exit code is
// not used: it reports "Timed out" for advertisements from a link-local
// source even though the kernel accepts them.
func (o *oneNode) ndisc6(target string) {
	_, _ = o.Exec(o.client, "ndisc6", "-1", "-n", "-r", "1", "-w", "300", target, "eth0")
}

// neighState returns the NUD state word of the client's entry for ip.
func neighState(entry string) string {
	f := strings.Fields(entry)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

func TestLabNDP(t *testing.T) {
	o := newOneNode(t, "ndisc6")
	o.Sysctl(o.client, "net.ipv6.neigh.eth0.delay_first_probe_time=1")
	m := o.cli.mark()
	o.ann.set(labVIP6)
	labkit.Eventually(t, 10*time.Second, "VIP announced on eth0", func() bool { return o.ann.ifaces(labVIP6) == "eth0" })
	o.cli.waitFrame(m, 10*time.Second, "unsolicited NA", isUnsolicitedNA(macNode1, labVIP6))

	// Address resolution by the client's kernel: multicast NS, solicited NA.
	m = o.cli.mark()
	_, _ = o.Exec(o.client, "ping", "-6", "-c", "1", "-W", "1", labVIP6)
	labkit.Eventually(t, 5*time.Second, "client neighbour entry with node1's MAC", func() bool {
		e := o.neigh(o.client, labVIP6)
		return strings.Contains(e, "lladdr "+macNode1) && neighState(e) != "FAILED"
	})
	o.cli.waitFrame(m, time.Second, "solicited NA", isSolicitedNA(macNode1, labVIP6))

	checkNUD(t, o)
	checkNotOwnedNS(t, o)
	checkSharedSolicitedNodeGroup(t, o)
	sent := o.ann.metric("herald_l2_responses_sent_total", "eth0", protoNDP)
	if sent < 4 {
		t.Errorf("herald_l2_responses_sent_total{interface=eth0,protocol=ndp} = %g, want >= 4", sent)
	}
	// every answer, multicast and unicast, has its delay from the kernel's
	// receive time of the solicitation
	if n := o.ann.metric("herald_l2_answer_delay_seconds", "eth0", protoNDP); n < 4 || n > sent {
		t.Errorf("herald_l2_answer_delay_seconds{interface=eth0,protocol=ndp} counts %g answers, want 4..%g (the answers sent)", n, sent)
	}
}

// checkNUD forces the client's entry STALE and sends traffic: the client
// goes DELAY then PROBE, and its unicast solicitation to the VIP (which the
// ICMPv6 socket never sees) is answered through the packet socket. The
// entry must come back REACHABLE and never be FAILED, twice in a row.
func checkNUD(t *testing.T, o *oneNode) {
	for round := range 2 {
		o.IP(o.client, "-6", "neigh", "change", labVIP6, "dev", "eth0", "lladdr", macNode1, "nud", "stale")
		m := o.cli.mark()
		ping := labkit.StartProc(t, o.client, labkit.ProcessOptions{Argv: []string{"ping", "-6", "-c", "1", "-W", "1", labVIP6}})
		isProbe := func(f frame) bool {
			return f.Kind == "ns" && f.Src == macClient && f.Dst == macNode1 && f.IPDst == labVIP6 && f.Target == labVIP6
		}
		var states []string
		labkit.Eventually(t, 10*time.Second, "entry REACHABLE again after a unicast probe", func() bool {
			s := neighState(o.neigh(o.client, labVIP6))
			if len(states) == 0 || states[len(states)-1] != s {
				states = append(states, s)
			}
			if s == "FAILED" || s == "INCOMPLETE" {
				t.Fatalf("round %d: entry went %s (states %v)", round, s, states)
			}
			return s == "REACHABLE" && countFrames(o.cli.framesSince(m), isProbe) > 0
		})
		_ = ping.Wait()
		probe := o.cli.waitFrame(m, time.Second, "unicast NS to the VIP", isProbe)
		o.cli.waitFrame(m, time.Second, "NA answering the unicast NS", func(f frame) bool {
			return isSolicitedNA(macNode1, labVIP6)(f) && f.T >= probe.T
		})
		t.Logf("NUD round %d: states %v", round, states)
	}
}

// checkNotOwnedNS: a solicitation for an address not announced gets no
// answer. The answer to the owned VIP solicited next proves the responder
// has handled the first solicitation.
func checkNotOwnedNS(t *testing.T, o *oneNode) {
	const other = "2001:db8:1::71"
	m := o.cli.mark()
	o.ndisc6(other)
	o.ndisc6(labVIP6)
	o.cli.waitFrame(m, 5*time.Second, "solicited NA", isSolicitedNA(macNode1, labVIP6))
	if n := countFrames(o.cli.framesSince(m), func(f frame) bool { return f.Kind == "na" && f.Target == other }); n != 0 {
		t.Fatalf("%d advertisements for an address not announced", n)
	}
}

// checkSharedSolicitedNodeGroup announces a second VIP with the same low 24
// bits (so the same solicited-node group, on eth0 by override), withdraws
// the first, and checks the second is still answered while the first is
// not.
func checkSharedSolicitedNodeGroup(t *testing.T, o *oneNode) {
	const twin = "2001:db8:2::70"
	o.ann.set(labVIP6, twin+"@eth0")
	o.ann.set(twin + "@eth0")
	m := o.cli.mark()
	o.ndisc6(labVIP6)
	o.ndisc6(twin)
	o.cli.waitFrame(m, 5*time.Second, "NA for the VIP sharing the group", isSolicitedNA(macNode1, twin))
	if n := countFrames(o.cli.framesSince(m), func(f frame) bool { return f.Kind == "na" && f.Target == labVIP6 }); n != 0 {
		t.Fatalf("%d advertisements for a withdrawn VIP", n)
	}
	o.ann.set()
	if got := o.ann.ifaces(twin); got != "" {
		t.Fatalf("Interfaces after SetAnnouncements(nil) = %q", got)
	}
}
