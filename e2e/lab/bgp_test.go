package lab_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/e2e/lab/routerconf"
	"github.com/herald-lb/herald/test/labkit"
)

// speaker is an FRR bgpd (no zebra, no kernel routes) in a node namespace
// announcing prefixes to the router: a stand-in for Herald's speaker to
// test the router side of the lab.
type speaker struct {
	proc *labkit.Process
	dir  string
}

func startSpeaker(t *testing.T, l *lab.Lab, node, password string, prefixes ...netip.Prefix) *speaker {
	t.Helper()
	n, err := l.Node(node)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(l.Dir(), "speaker-"+node)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "frr.conf"), []byte(speakerConfig(n, password, prefixes)), 0o640); err != nil {
		t.Fatal(err)
	}
	chownFRR(t, dir, filepath.Join(dir, "frr.conf"))
	// the config file is read at start (not pushed line by line with
	// vtysh, which makes new sessions flap once)
	p, err := l.Start(node, "speaker-"+node, []string{"/usr/lib/frr/bgpd", "-Z", "-n", "-F", "datacenter", "-u", "frr", "-g", "frr",
		"--vty_socket", dir, "-i", filepath.Join(dir, "bgpd.pid"), "-P", "0", "-f", filepath.Join(dir, "frr.conf")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &speaker{proc: p, dir: dir}
	t.Cleanup(func() { s.stop() })
	return s
}

func (s *speaker) stop() {
	_ = s.proc.Stop()
	_ = os.RemoveAll(s.dir)
}

func speakerConfig(n lab.Node, password string, prefixes []netip.Prefix) string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, f+"\n", a...) }
	w("frr defaults datacenter")
	w("route-map OUT permit 10\n set community 64512:100 65000:%d\n set large-community 64512:1:%d\nexit", n.Index, n.Index)
	w("router bgp %d\n bgp router-id %s", lab.NodeASN, n.IPv4)
	// no graceful restart: both routers are GR helpers and would keep a
	// stopped speaker's routes for its restart time
	w(" no bgp ebgp-requires-policy\n no bgp network import-check\n no bgp default ipv4-unicast\n bgp graceful-restart-disable")
	for _, peer := range []string{lab.RouterIPv4, lab.RouterIPv6} {
		w(" neighbor %s remote-as %d\n neighbor %s timers connect 1", peer, lab.RouterASN, peer)
		if password != "" {
			w(" neighbor %s password %s", peer, password)
		}
	}
	for _, af := range []struct{ name, peer string }{{"ipv4", lab.RouterIPv4}, {"ipv6", lab.RouterIPv6}} {
		w(" address-family %s unicast\n  neighbor %s activate\n  neighbor %s route-map OUT out", af.name, af.peer, af.peer)
		for _, p := range prefixes {
			if p.Addr().Is4() == (af.name == "ipv4") {
				w("  network %s", p)
			}
		}
		w(" exit-address-family")
	}
	w("exit")
	return b.String()
}

func chownFRR(t *testing.T, paths ...string) {
	t.Helper()
	u, err := user.Lookup("frr")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	for _, p := range paths {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
}

func waitSessions(t *testing.T, l *lab.Lab, want []netip.Addr) []routerconf.Peer {
	t.Helper()
	var peers []routerconf.Peer
	eventually(t, 30*time.Second, fmt.Sprintf("sessions with %v established", want), func() error {
		var err error
		if peers, err = l.RouterNeighbors(ctxFor(t, 10*time.Second)); err != nil {
			return err
		}
		var up []netip.Addr
		for _, p := range peers {
			if p.Up() {
				up = append(up, p.Address)
			}
		}
		if !slices.Equal(up, want) {
			return fmt.Errorf("established: %v", up)
		}
		return nil
	})
	return peers
}

func waitFIB(t *testing.T, l *lab.Lab, prefix netip.Prefix, nodes string) lab.Route {
	t.Helper()
	var r lab.Route
	eventually(t, 30*time.Second, fmt.Sprintf("router FIB for %s via %s", prefix, nodes), func() error {
		var err error
		if r, err = l.RouterRoutes(ctxFor(t, 10*time.Second), prefix); err != nil {
			return err
		}
		// the RIB is read before the FIB: a path can be in the RIB,
		// waiting for the router's best-path run, while the FIB read a
		// moment later has it already. So wait for the RIB to settle too.
		if got := fmt.Sprint(r.FIBNodes()); got != nodes || len(r.Paths) != len(r.FIB) || bestPaths(r) != 1 {
			return fmt.Errorf("FIB via %s, %d BGP paths, %d best", got, len(r.Paths), bestPaths(r))
		}
		return nil
	})
	return r
}

// Both routers learn the same /32 and /128 from two nodes, install ECMP
// next hops, report communities, and withdraw a node's path when its
// speaker stops.
func TestRouterBGP(t *testing.T) {
	l := lab.Shared(t)
	t.Cleanup(func() {
		if err := l.ReconfigureRouter(context.Background(), lab.FRR, lab.BGPOptions{}); err != nil {
			t.Error(err)
		}
	})
	v4, v6 := netip.MustParsePrefix("198.51.100.140/32"), netip.MustParsePrefix("2001:db8:ff::20/128")
	n1, _ := l.Node("node1")
	n2, _ := l.Node("node2")
	for _, kind := range []lab.RouterKind{lab.BIRD, lab.FRR} {
		t.Run(string(kind), func(t *testing.T) {
			if err := l.ReconfigureRouter(ctxFor(t, time.Minute), kind, lab.BGPOptions{}); err != nil {
				t.Fatal(err)
			}
			startSpeaker(t, l, "node1", "", v4, v6)
			s2 := startSpeaker(t, l, "node2", "", v4, v6)
			peers := waitSessions(t, l, []netip.Addr{n1.IPv4, n2.IPv4, n1.IPv6, n2.IPv6})
			for _, p := range peers {
				if !p.Dynamic || p.ASN != lab.NodeASN {
					t.Errorf("peer %+v: want a dynamic neighbor of AS %d", p, lab.NodeASN)
				}
			}
			r := waitFIB(t, l, v4, "[node1 node2]")
			waitFIB(t, l, v6, "[node1 node2]")
			checkPaths(t, r)
			s2.stop()
			waitFIB(t, l, v4, "[node1]")
			waitFIB(t, l, v6, "[node1]")
		})
	}
}

func checkPaths(t *testing.T, r lab.Route) {
	t.Helper()
	if len(r.Paths) != 2 {
		t.Fatalf("paths %+v", r.Paths)
	}
	for _, p := range r.Paths {
		i := 1
		if p.Peer == addr("198.51.100.12") {
			i = 2
		}
		wantComm := []string{"64512:100", fmt.Sprintf("65000:%d", i)}
		if !slices.Equal(p.Communities, wantComm) || !slices.Equal(p.LargeCommunities, []string{fmt.Sprintf("64512:1:%d", i)}) ||
			!slices.Equal(p.ASPath, []uint32{lab.NodeASN}) || len(p.NextHops) == 0 {
			t.Errorf("path %+v", p)
		}
	}
	if best := bestPaths(r); best != 1 {
		t.Errorf("%d best paths", best)
	}
}

// bestPaths counts the paths the router selected for the prefix.
func bestPaths(r lab.Route) int {
	n := 0
	for _, p := range r.Paths {
		if p.Best {
			n++
		}
	}
	return n
}

// A static neighbor with a TCP MD5 password and BFD: the session comes up
// only with the password, is not dynamic, and reports a BFD state.
func TestRouterStaticNeighbor(t *testing.T) {
	l := lab.Shared(t)
	t.Cleanup(func() {
		if err := l.ReconfigureRouter(context.Background(), lab.FRR, lab.BGPOptions{}); err != nil {
			t.Error(err)
		}
	})
	n3, _ := l.Node("node3")
	prefix := netip.MustParsePrefix("198.51.100.141/32")
	for _, kind := range []lab.RouterKind{lab.BIRD, lab.FRR} {
		t.Run(string(kind), func(t *testing.T) {
			bgp := lab.BGPOptions{StaticNeighbors: []lab.StaticNeighbor{
				{Node: "node3", BFD: true, Password: "labpw"},
				{Node: "node3", IPv6: true, BFD: true, Password: "labpw"},
			}}
			if err := l.ReconfigureRouter(ctxFor(t, time.Minute), kind, bgp); err != nil {
				t.Fatal(err)
			}
			startSpeaker(t, l, "node3", "labpw", prefix)
			peers := waitSessions(t, l, []netip.Addr{n3.IPv4, n3.IPv6})
			for _, p := range peers {
				if p.Dynamic || p.BFD == "" {
					t.Errorf("static neighbor %+v: want not dynamic, with a BFD state", p)
				}
				t.Logf("%s static neighbor %s: state %s, BFD %s", kind, p.Address, p.State, p.BFD)
			}
			waitFIB(t, l, prefix, "[node3]")
		})
	}
}
