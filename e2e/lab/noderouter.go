package lab

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/herald-lb/herald/test/labkit"
)

// A node router is a BGP daemon of the node's own (BIRD 2 here, as Calico
// runs it) in the node's network namespace: it peers upstream with the
// lab router from the node's IPv4 and IPv6 addresses, as the lab router's
// listen ranges expect of a node (AS BGPOptions.NodeASN), and downstream
// with Herald's speaker over IPv4 loopback, which carries both families.
// Herald reaches the fabric through it.
const (
	// NodeRouterAddress is the node router's loopback address: the
	// speakers' BGPPeer.peerAddress (port 179).
	NodeRouterAddress = "127.0.0.1"
	// NodeRouterHeraldAddress is the speakers' loopback source address
	// (BGPPeer.sourceAddress): BIRD wants a neighbor address that is not
	// its own.
	NodeRouterHeraldAddress = "127.0.0.2"
	// NodeRouterHeraldASN is the speakers' AS toward the node router
	// (BGPPeer.myASN); the node router's own AS is BGPOptions.NodeASN.
	NodeRouterHeraldASN = 64601
)

// nodeRouter is one node's BIRD.
type nodeRouter struct {
	node  string
	dir   string
	procs []*labkit.Process
}

// cli is the node router's command line.
func (r *nodeRouter) cli() labkit.BIRD { return labkit.BIRD{Dir: r.dir} }

// renderNodeBIRD is a node router's bird.conf: Herald's routes in from
// loopback (multihop: BIRD refuses a direct session with a local address;
// passive: Herald dials), out to the lab router, each family over a
// session of its own with the node's address as next hop (eBGP: BIRD's
// next hop self), nothing into the kernel.
// BIRD waits 60 s by default before it restarts a protocol after an error
// (a hold timer expired, a peer's Cease): `error wait time` shortens that.
func renderNodeBIRD(n Node, o BGPOptions, logFile string) string {
	asn, upstream := o.NodeASN, o.ASN
	if asn == 0 {
		asn = NodeASN
	}
	if upstream == 0 {
		upstream = RouterASN
	}
	hold, keep := o.HoldTime, o.Keepalive
	if hold == 0 && keep == 0 {
		hold, keep = 9, 3
	}
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("router id %s;", n.IPv4)
	w("log %q all;", logFile)
	w("timeformat protocol iso long;")
	w("protocol device { }")
	w("protocol bgp herald {")
	w("  local %s as %d;", NodeRouterAddress, asn)
	w("  neighbor %s as %d;", NodeRouterHeraldAddress, NodeRouterHeraldASN)
	w("  multihop;")
	w("  passive on;")
	w("  hold time %d; keepalive time %d;", hold, keep)
	w("  error wait time 1, 5;")
	w("  ipv4 { import all; export none; };")
	w("  ipv6 { import all; export none; };")
	w("}")
	w("protocol bgp upstream {")
	w("  local %s as %d;", n.IPv4, asn)
	w("  neighbor %s as %d;", RouterIPv4, upstream)
	w("  hold time %d; keepalive time %d;", hold, keep)
	w("  connect retry time 1;")
	w("  error wait time 1, 5;")
	w("  ipv4 { import none; export where proto = \"herald\"; };")
	w("}")
	w("protocol bgp upstream6 {")
	w("  local %s as %d;", n.IPv6, asn)
	w("  neighbor %s as %d;", RouterIPv6, upstream)
	w("  hold time %d; keepalive time %d;", hold, keep)
	w("  connect retry time 1;")
	w("  error wait time 1, 5;")
	w("  ipv6 { import none; export where proto = \"herald\"; };")
	w("}")
	return b.String()
}

// startNodeRouters starts a BIRD in every node's namespace.
func (l *Lab) startNodeRouters(ctx context.Context, o BGPOptions) error {
	nodes := l.Nodes()
	routers := make([]*nodeRouter, len(nodes))
	err := parallel(len(nodes), func(i int) error {
		n := nodes[i]
		r := &nodeRouter{node: n.Name, dir: filepath.Join(l.dir, "bird-"+n.Name)}
		routers[i] = r
		spawn := func(name string, argv []string) (*labkit.Process, error) {
			p, err := l.spawn(labkit.ProcessOptions{Name: n.Name + "-" + name, NS: n.NS, Argv: argv})
			if err != nil {
				return nil, err
			}
			r.procs = append(r.procs, p)
			return p, nil
		}
		b := r.cli()
		if _, err := b.Start(ctx, renderNodeBIRD(n, o, b.LogPath()), spawn); err != nil {
			return fmt.Errorf("node router on %s: %w", n.Name, err)
		}
		return nil
	})
	l.routerMu.Lock()
	for _, r := range routers {
		if r != nil {
			l.nodeRouters = append(l.nodeRouters, r)
		}
	}
	l.routerMu.Unlock()
	return err
}

// stopNodeRouters stops the node routers, if any run.
func (l *Lab) stopNodeRouters() error {
	l.routerMu.Lock()
	routers := l.nodeRouters
	l.nodeRouters = nil
	l.routerMu.Unlock()
	return parallel(len(routers), func(i int) error {
		for _, p := range routers[i].procs {
			if err := p.Stop(); err != nil {
				return fmt.Errorf("stopping the node router on %s: %w", routers[i].node, err)
			}
		}
		return nil
	})
}

// NodeRouterCLI runs one birdc command on node's node router.
func (rs *Routers) NodeRouterCLI(ctx context.Context, node, command string) (string, error) {
	rs.routerMu.Lock()
	var r *nodeRouter
	for _, nr := range rs.nodeRouters {
		if nr.node == node {
			r = nr
		}
	}
	rs.routerMu.Unlock()
	if r == nil {
		return "", fmt.Errorf("no node router runs on %s", node)
	}
	return r.cli().CLI(ctx, command)
}
