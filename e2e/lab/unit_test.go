package lab

import (
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestOptions(t *testing.T) {
	o, err := Options{}.withDefaults()
	if err != nil || o.Nodes != 3 || o.Router != FRR || o.ProxyMode != NFTables || o.StateRoot != DefaultStateRoot {
		t.Fatalf("defaults: %+v %v", o, err)
	}
	for _, bad := range []Options{{Nodes: 9}, {Router: "quagga"}, {ProxyMode: "ipvs"}, {RunID: "ABCD"}, {RunID: "abc"}, {ExtraPodPorts: []int{8080}}} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	o.BGP.StaticNeighbors = []StaticNeighbor{{Node: "node2", BFD: true}, {Node: "node2", IPv6: true, Password: "pw"}}
	c, err := o.RouterConfig()
	if err != nil {
		t.Fatal(err)
	}
	if c.ASN != RouterASN || c.PeerASN != NodeASN || len(c.Neighbors) != 2 || c.Neighbors[1].Address != NodeIPv6(2) || !c.Neighbors[0].BFD {
		t.Errorf("router config %+v", c)
	}
	o.BGP.StaticNeighbors = []StaticNeighbor{{Node: "node4"}}
	if _, err := o.RouterConfig(); err == nil {
		t.Error("a static neighbor for node4 of a 3-node lab was accepted")
	}
}

func TestPlan(t *testing.T) {
	n := newNode(2, "abcd")
	if n.IPv4.String() != "198.51.100.12" || n.IPv6.String() != "2001:db8:1::12" || n.MAC.String() != "02:00:c6:33:64:0c" ||
		n.Pod.CIDRv4.String() != "198.51.100.168/29" || n.Pod.CIDRv6.String() != "2001:db8:10:2::/64" || n.NS != "herald-abcd-node2" {
		t.Errorf("node2: %+v", n)
	}
	last := newNode(MaxNodes, "abcd")
	lastAddr := last.Pod.CIDRv4.Addr().As4()
	lastAddr[3] += byte(1<<(32-last.Pod.CIDRv4.Bits()) - 1)
	if !netip.MustParsePrefix(PodCIDRV4).Contains(netip.AddrFrom4(lastAddr)) || len(rootLinkName("abcd")) > 15 {
		t.Errorf("node%d pods %v, root link %q", MaxNodes, last.Pod.CIDRv4, rootLinkName("abcd"))
	}
	for i := 1; i <= MaxNodes; i++ {
		for j := i + 1; j <= MaxNodes; j++ {
			if newNode(i, "abcd").Pod.CIDRv4.Overlaps(newNode(j, "abcd").Pod.CIDRv4) {
				t.Errorf("pod subnets of node%d and node%d overlap", i, j)
			}
		}
	}
}

func probeAt(seq int, ms int, macs ...string) Probe {
	p := Probe{Seq: seq, Sent: time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond)}
	for _, m := range macs {
		mac, _ := net.ParseMAC(m)
		p.Answers = append(p.Answers, Answer{MAC: mac, Node: map[string]string{"02:00:c6:33:64:0b": "node1", "02:00:c6:33:64:0c": "node2"}[m]})
	}
	return p
}

func TestProbeLog(t *testing.T) {
	const a, b = "02:00:c6:33:64:0b", "02:00:c6:33:64:0c"
	log := ProbeLog{probeAt(1, 0, a), probeAt(2, 20), probeAt(3, 40), probeAt(4, 60), probeAt(5, 80, b), probeAt(6, 100, a, b), probeAt(7, 120)}
	if gap, n := log.LongestGap(); gap != 60*time.Millisecond || n != 3 {
		t.Errorf("longest gap %v over %d probes", gap, n)
	}
	if got := log.Unanswered(); len(got) != 4 {
		t.Errorf("unanswered %d", len(got))
	}
	if c := log.Conflicts(); len(c) != 1 || c[0].Seq != 6 || !slices.Equal(c[0].Nodes(), []string{"node1", "node2"}) {
		t.Errorf("conflicts %+v", c)
	}
	t0 := time.Unix(0, 0).Add(30 * time.Millisecond)
	if p, ok := log.After(t0).FirstAnswered("node2"); !ok || p.Seq != 5 {
		t.Errorf("first answered by node2 after 30ms: %+v %v", p, ok)
	}
	if p, ok := log.After(t0).FirstAnswered("node1"); !ok || p.Seq != 6 {
		t.Errorf("first answered by node1 after 30ms: %+v %v", p, ok)
	}
	if got := log.Between(t0, t0.Add(40*time.Millisecond)); len(got) != 2 || got[0].Seq != 3 {
		t.Errorf("between: %+v", got)
	}
	if s := log.SustainedConflicts(); len(s) != 0 {
		t.Errorf("one double answer counted as sustained: %+v", s)
	}
	sustained := append(slices.Clone(log), probeAt(8, 140, a, b), probeAt(9, 160, a, b))
	if s := sustained.SustainedConflicts(); len(s) != 2 || s[0].Seq != 8 {
		t.Errorf("sustained %+v", s)
	}
	if d, n := sustained.LongestConflict(); d != 20*time.Millisecond || n != 2 { // the run ends the log: to its last probe
		t.Errorf("longest conflict %v over %d probes", d, n)
	}
	if d := log.LongestConflictStall(); d != 0 {
		t.Errorf("stall of a log with no run of double answers: %v", d)
	}
	late := probeAt(10, 180, a, b)
	late.Answers[0].At, late.Answers[1].At = late.Sent.Add(400*time.Millisecond), late.Sent.Add(time.Millisecond)
	stalled := append(slices.Clone(sustained), late, probeAt(11, 200, a))
	// the longest run is now 8-10; an answer of probe 1 as late would not count
	stalled[0].Answers[0].At = stalled[0].Sent.Add(time.Second)
	if d := stalled.LongestConflictStall(); d != 400*time.Millisecond {
		t.Errorf("stall in the longest run of double answers: %v, want 400ms", d)
	}
}

func TestAroundLongestGapShowsTheRunAndItsNeighbours(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var log ProbeLog
	for i := range 8 {
		p := Probe{Seq: i + 1, Sent: t0.Add(time.Duration(i) * 10 * time.Millisecond)}
		if i < 3 || i > 4 {
			p.Answers = []Answer{{Node: "node1", At: p.Sent.Add(2 * time.Millisecond)}}
		}
		log = append(log, p)
	}
	got := log.AroundLongestGap(1)
	want := "  (the run starts at 00:16:40.030 UTC)\n  probe 3 sent -10ms: node1 after 2ms\n  probe 4 sent 0s: no answer\n  probe 5 sent 10ms: no answer\n  probe 6 sent 20ms: node1 after 2ms\n"
	if got != want {
		t.Errorf("AroundLongestGap(1) =\n%s\nwant\n%s", got, want)
	}
	if got := (ProbeLog{}).AroundLongestConflict(2); got != "(no such run)" {
		t.Errorf("AroundLongestConflict of no run = %q", got)
	}
}

func TestLeftToUser(t *testing.T) {
	me := recordOf("holder", "", os.Getpid(), "")
	gone := me
	gone.Start++ // the same PID, another process: this one is gone
	for _, c := range []struct {
		name string
		s    state
		want bool
	}{
		{"a test's lab", state{}, false},
		{"make lab-up killed during bring-up", state{Detached: true}, false},
		{"make lab-up done", state{Detached: true, HandedOver: true}, true},
		{"make demo under a running test", state{Detached: true, HandedOver: true, Holder: &me}, true},
		{"make demo whose test was killed", state{Detached: true, HandedOver: true, Holder: &gone}, false},
	} {
		if got := c.s.leftToUser(); got != c.want {
			t.Errorf("%s: left to the user %v, want %v", c.name, got, c.want)
		}
	}
}

// TestNodeBIRDConfig: a node router's configuration names Herald's
// loopback neighbor as multihop and passive, the lab router over both
// families, and parses with `bird -p` where BIRD is installed.
func TestNodeBIRDConfig(t *testing.T) {
	n := Node{Name: "node2", IPv4: NodeIPv4(2), IPv6: NodeIPv6(2)}
	conf := renderNodeBIRD(n, BGPOptions{}, filepath.Join(t.TempDir(), "bird.log"))
	for _, want := range []string{
		"router id 198.51.100.12;",
		"local 127.0.0.1 as 64513;", "neighbor 127.0.0.2 as 64601;", "multihop;", "passive on;",
		"local 198.51.100.12 as 64513;", "neighbor 198.51.100.1 as 64512;",
		"local 2001:db8:1::12 as 64513;", "neighbor 2001:db8:1::1 as 64512;",
		"error wait time 1, 5;", "hold time 9; keepalive time 3;",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("node router config lacks %q:\n%s", want, conf)
		}
	}
	if _, err := exec.LookPath("bird"); err != nil {
		t.Skip("bird is not installed")
	}
	path := filepath.Join(t.TempDir(), "bird.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bird", "-p", "-c", path).CombinedOutput(); err != nil {
		t.Errorf("bird -p: %v: %s\n%s", err, out, conf)
	}
}
