package lab

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/herald-lb/herald/e2e/lab/probe"
	"github.com/herald-lb/herald/test/labkit"
)

// The lab's hosts and how they are wired:
//
//	bridge ns: br0 with ports router, client, node1..N, host (root leg)
//	router ns: eth0 on the segment, eth1 to ext
//	nodeN ns:  eth0 on the segment; cni0 (made by the CNI bridge plugin
//	           when the first pod starts) with the node's pod subnets
//	root ns:   herald<runid> (198.51.100.126/25, 2001:db8:1::fe/64)

// hostNames lists every lab namespace's host name, bridge first.
func (nw *Network) hostNames() []string { return hostNamesFor(len(nw.nodes)) }

// hostNamesFor lists the host names of a lab with nodes nodes.
func hostNamesFor(nodes int) []string {
	hosts := []string{Bridge, Router, Client, External}
	for i := 1; i <= nodes; i++ {
		hosts = append(hosts, NodeName(i))
	}
	return hosts
}

// sysctlsFor are the settings of a host's namespace, applied before any
// interface exists so that the defaults reach them.
func sysctlsFor(host string) []string {
	s := []string{
		"net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0",
		"net.ipv6.conf.all.keep_addr_on_down=1", "net.ipv6.conf.default.keep_addr_on_down=1",
		"net.ipv6.conf.all.accept_ra=0", "net.ipv6.conf.default.accept_ra=0",
		"net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0",
		"net.ipv4.conf.all.accept_redirects=0", "net.ipv4.conf.default.accept_redirects=0",
		"net.ipv6.conf.all.accept_redirects=0", "net.ipv6.conf.default.accept_redirects=0",
	}
	switch {
	case host == Bridge:
		// the switch is L2 only: no IPv6 (no DAD, RS or MLD of its own)
		s = append(s, "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	case host == Router || strings.HasPrefix(host, "node"):
		// forwarders; a node forwards VIP traffic back out of eth0 to
		// another node's pod, so no redirects from nodes either
		s = append(s, "net.ipv4.ip_forward=1",
			"net.ipv6.conf.all.forwarding=1", "net.ipv6.conf.default.forwarding=1",
			"net.ipv4.conf.all.send_redirects=0", "net.ipv4.conf.default.send_redirects=0")
		if host == Router {
			s = append(s, "net.ipv4.fib_multipath_hash_policy=1", "net.ipv6.fib_multipath_hash_policy=1")
		}
	}
	return s
}

// buildTopology creates the namespaces, links, addresses and routes.
func (nw *Network) buildTopology(ctx context.Context) error {
	hosts := nw.hostNames()
	var adds []string
	for _, h := range hosts {
		adds = append(adds, "netns add "+nw.ns(h))
	}
	if err := ipBatch(ctx, "", adds); err != nil {
		return fmt.Errorf("creating namespaces: %w", err)
	}
	err := parallel(len(hosts), func(i int) error {
		argv := append([]string{"sysctl", "-qw"}, sysctlsFor(hosts[i])...)
		if _, err := run(ctx, labkit.InNS(nw.ns(hosts[i]), argv...)...); err != nil {
			return fmt.Errorf("sysctls of %s: %w", hosts[i], err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := ipBatch(ctx, "", nw.linkCommands()); err != nil {
		return fmt.Errorf("creating links: %w", err)
	}
	err = parallel(len(hosts), func(i int) error {
		if err := ipBatch(ctx, nw.ns(hosts[i]), nw.hostCommands(hosts[i])); err != nil {
			return fmt.Errorf("configuring %s: %w", hosts[i], err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return nw.configureRootLeg(ctx)
}

// linkCommands create every veth pair with both ends in place, so no lab
// interface but the root leg ever exists in the root namespace.
func (nw *Network) linkCommands() []string {
	br := nw.ns(Bridge)
	veth := func(name string, mac string, ns, peer, peerMAC, peerNS string) string {
		c := "link add " + name
		if mac != "" {
			c += " address " + mac
		}
		if ns != "" {
			c += " netns " + ns
		}
		c += " type veth peer name " + peer
		if peerMAC != "" {
			c += " address " + peerMAC
		}
		return c + " netns " + peerNS
	}
	cmds := []string{
		veth("eth0", planMAC(1).String(), nw.ns(Router), Router, "", br),
		veth("eth1", planMAC(193).String(), nw.ns(Router), "eth0", planMAC(194).String(), nw.ns(External)),
		veth("eth0", planMAC(100).String(), nw.ns(Client), Client, "", br),
		veth(rootLinkName(nw.id), planMAC(126).String(), "", "host", "", br),
	}
	for _, n := range nw.nodes {
		cmds = append(cmds, veth("eth0", n.MAC.String(), n.NS, n.Name, "", br))
	}
	return cmds
}

// hostCommands configure one namespace (run with `ip -n ns -batch`).
func (nw *Network) hostCommands(host string) []string {
	cmds := []string{"link set lo up"}
	switch {
	case host == Bridge:
		cmds = append(cmds, "link add br0 type bridge stp_state 0 forward_delay 0 mcast_snooping 0", "link set br0 up")
		ports := []string{Router, Client, "host"}
		for _, n := range nw.nodes {
			ports = append(ports, n.Name)
		}
		for _, p := range ports {
			cmds = append(cmds, "link set "+p+" master br0", "link set "+p+" up")
		}
	case host == Router:
		cmds = append(cmds, iface("eth0", RouterIPv4+"/25", RouterIPv6+"/64")...)
		cmds = append(cmds, iface("eth1", RouterExtIPv4+"/28", RouterExtIPv6+"/64")...)
		for _, n := range nw.nodes {
			cmds = append(cmds, routeVia(n.Pod.CIDRv4.String(), n.IPv4.String()), routeVia(n.Pod.CIDRv6.String(), n.IPv6.String()))
		}
	case host == Client:
		cmds = append(cmds, iface("eth0", ClientIPv4+"/25", ClientIPv6+"/64")...)
		cmds = append(cmds, probeSourceCommands("eth0")...)
		cmds = append(cmds, defaultRoutes(RouterIPv4, RouterIPv6)...)
	case host == External:
		cmds = append(cmds, iface("eth0", ExternalIPv4+"/28", ExternalIPv6+"/64")...)
		cmds = append(cmds, defaultRoutes(RouterExtIPv4, RouterExtIPv6)...)
	default:
		for _, n := range nw.nodes {
			if n.Name == host {
				cmds = append(cmds, nw.nodeCommands(n)...)
			}
		}
	}
	return cmds
}

// nodeRoutes are a node's routes: default via the router, the other
// nodes' pod subnets via those nodes (a flat "CNI").
func (nw *Network) nodeRoutes(n Node) []string {
	cmds := defaultRoutes(RouterIPv4, RouterIPv6)
	for _, o := range nw.nodes {
		if o.Name != n.Name {
			cmds = append(cmds, routeVia(o.Pod.CIDRv4.String(), o.IPv4.String()), routeVia(o.Pod.CIDRv6.String(), o.IPv6.String()))
		}
	}
	return cmds
}

func (nw *Network) nodeCommands(n Node) []string {
	cmds := iface("eth0", n.IPv4.String()+"/25", n.IPv6.String()+"/64")
	return append(cmds, nw.nodeRoutes(n)...)
}

func iface(dev, v4, v6 string) []string {
	return []string{"addr add " + v4 + " dev " + dev, "addr add " + v6 + " dev " + dev + " nodad", "link set " + dev + " up"}
}

// probeSourceCommands give the client's dev the probe sources
// (ProbeSourcesV4, ProbeSourcesV6) after its own addresses: IPv4 ones
// secondary, IPv6 ones deprecated, so that neither is ever the source of
// the client's connections.
func probeSourceCommands(dev string) []string {
	var cmds []string
	for _, p := range []netip.Prefix{netip.MustParsePrefix(ProbeSourcesV4), netip.MustParsePrefix(ProbeSourcesV6)} {
		bits := 25
		extra := ""
		if p.Addr().Is6() {
			bits, extra = 64, " nodad preferred_lft 0"
		}
		for _, a := range probe.PrefixAddrs(p) {
			cmds = append(cmds, "addr add "+netip.PrefixFrom(a, bits).String()+" dev "+dev+extra)
		}
	}
	return cmds
}

func routeVia(dst, via string) string { return "route replace " + dst + " via " + via }

func defaultRoutes(v4, v6 string) []string {
	return []string{routeVia("0.0.0.0/0", v4), routeVia("::/0", v6)}
}

// configureRootLeg gives the root namespace its one lab address pair and
// nothing else: no routes beyond the connected ones, no RA, no DAD.
func (nw *Network) configureRootLeg(ctx context.Context) error {
	leg := rootLinkName(nw.id)
	for _, s := range []string{"accept_ra=0", "accept_dad=0", "autoconf=0"} {
		k, v, _ := strings.Cut(s, "=")
		if err := os.WriteFile(filepath.Join("/proc/sys/net/ipv6/conf", leg, k), []byte(v), 0o644); err != nil {
			return fmt.Errorf("sysctl %s of %s: %w", k, leg, err)
		}
	}
	return ipBatch(ctx, "", iface(leg, RootIPv4+"/25", RootIPv6+"/64"))
}
