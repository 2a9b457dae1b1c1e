package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// The VRF uplinks (Options.VRF, AddVRFUplinks): a second segment, bridge
// br1 in the bridge namespace, between the router's eth2 and every
// node's eth1, which each node enslaves to a VRF device. The router
// accepts BGP sessions from the segment (listen ranges); the nodes'
// default VRF keeps eth0 (API server, member list, pod routes).
const (
	VRFSegmentV4  = "198.51.100.208/28"
	VRFSegmentV6  = "2001:db8:3::/64"
	RouterVRFIPv4 = "198.51.100.209"
	RouterVRFIPv6 = "2001:db8:3::1"
	// VRFTable is the routing table of the nodes' VRF device.
	VRFTable = 1001
	// vrfPodRulePref is the priority of the rules that route traffic
	// arriving in the VRF to the pods by the main table, before the
	// kernel's l3mdev rule (1000) sends it to the VRF's table.
	vrfPodRulePref = 900
)

// NodeVRFIPv4 is node i's address on the VRF segment, 198.51.100.(209+i).
func NodeVRFIPv4(i int) netip.Addr { return v4(209 + i) }

// NodeVRFIPv6 is node i's address on the VRF segment, 2001:db8:3::1i.
func NodeVRFIPv6(i int) netip.Addr { return netip.MustParseAddr(fmt.Sprintf("2001:db8:3::%d", 10+i)) }

// AddVRFUplinks gives every node an uplink to the router in VRF name (see
// the constants above) and lets the router accept sessions from it at its
// next (re)configuration. Undo with RemoveVRFUplinks.
func (l *Lab) AddVRFUplinks(ctx context.Context, name string) error {
	if name == "" || len(name) > 15 {
		return fmt.Errorf("VRF name %q: want 1 to 15 characters", name)
	}
	if err := l.addVRFDevices(ctx, name); err != nil {
		return err
	}
	br := l.ns(Bridge)
	links := []string{"link add eth2 netns " + l.ns(Router) + " type veth peer name vrouter netns " + br}
	ports := []string{"vrouter"}
	for _, n := range l.nodes {
		links = append(links, "link add eth1 netns "+n.NS+" type veth peer name v"+n.Name+" netns "+br)
		ports = append(ports, "v"+n.Name)
	}
	if err := ipBatch(ctx, "", links); err != nil {
		return fmt.Errorf("VRF uplinks: %w", err)
	}
	bridge := []string{"link add br1 type bridge stp_state 0 forward_delay 0 mcast_snooping 0", "link set br1 up"}
	for _, p := range ports {
		bridge = append(bridge, "link set "+p+" master br1", "link set "+p+" up")
	}
	if err := ipBatch(ctx, br, bridge); err != nil {
		return fmt.Errorf("VRF segment bridge: %w", err)
	}
	if err := ipBatch(ctx, l.ns(Router), iface("eth2", RouterVRFIPv4+"/28", RouterVRFIPv6+"/64")); err != nil {
		return fmt.Errorf("router's VRF uplink: %w", err)
	}
	err := parallel(len(l.nodes), func(i int) error {
		n := l.nodes[i]
		if err := ipBatch(ctx, n.NS, nodeVRFCommands(name, n)); err != nil {
			return fmt.Errorf("%s: VRF %s: %w", n.Name, name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.opts.VRF = name
	l.mu.Unlock()
	return nil
}

// ErrNoVRFDriver: the kernel cannot make VRF devices (no CONFIG_NET_VRF).
var ErrNoVRFDriver = errors.New("this kernel has no VRF driver (CONFIG_NET_VRF is not set): ip link add type vrf fails")

// addVRFDevices creates VRF name on every node, first, so that a kernel
// without the driver leaves nothing else behind.
func (l *Lab) addVRFDevices(ctx context.Context, name string) error {
	cmds := []string{"link add " + name + " type vrf table " + strconv.Itoa(VRFTable), "link set " + name + " up"}
	err := parallel(len(l.nodes), func(i int) error {
		if err := ipBatch(ctx, l.nodes[i].NS, cmds); err != nil {
			return fmt.Errorf("%s: VRF %s: %w", l.nodes[i].Name, name, err)
		}
		return nil
	})
	if err != nil && strings.Contains(err.Error(), "Unknown device type") {
		return fmt.Errorf("%w: %v", ErrNoVRFDriver, err)
	}
	return err
}

// nodeVRFCommands enslave eth1 to the node's VRF before
// giving eth1 its addresses, end the VRF's table with unreachable
// defaults (nothing falls through to the main table) and route what
// arrives in the VRF for the pods by the main table, where the pod
// routes are: kube-proxy's DNAT turns a VIP into a pod address before
// that lookup.
func nodeVRFCommands(name string, n Node) []string {
	table := strconv.Itoa(VRFTable)
	pref := strconv.Itoa(vrfPodRulePref)
	cmds := []string{"link set eth1 master " + name}
	cmds = append(cmds, iface("eth1", NodeVRFIPv4(n.Index).String()+"/28", NodeVRFIPv6(n.Index).String()+"/64")...)
	cmds = append(cmds,
		"route add unreachable default metric 4278198272 table "+table,
		"route add unreachable ::/0 metric 4278198272 table "+table,
		"rule add iif "+name+" to "+PodCIDRV4+" lookup main pref "+pref,
		"rule add iif "+name+" to "+PodCIDRV6+" lookup main pref "+pref,
	)
	return cmds
}

// RemoveVRFUplinks undoes AddVRFUplinks: the router stops accepting the
// VRF segment at its next (re)configuration.
func (l *Lab) RemoveVRFUplinks(ctx context.Context) error {
	l.mu.Lock()
	name := l.opts.VRF
	l.opts.VRF = ""
	l.mu.Unlock()
	if name == "" {
		return nil
	}
	var errs []error
	for _, n := range l.nodes {
		pref := strconv.Itoa(vrfPodRulePref)
		cmds := []string{"link del eth1", "link del " + name,
			"rule del iif " + name + " to " + PodCIDRV4 + " pref " + pref, "rule del iif " + name + " to " + PodCIDRV6 + " pref " + pref}
		if err := ipBatch(ctx, n.NS, cmds); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.Name, err))
		}
	}
	if err := ipBatch(ctx, l.ns(Router), []string{"link del eth2"}); err != nil {
		errs = append(errs, err)
	}
	if err := ipBatch(ctx, l.ns(Bridge), []string{"link del br1"}); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("removing the VRF uplinks: %v", errs)
	}
	return nil
}

// vrfListenRanges are the router's listen ranges for the VRF segment.
func vrfListenRanges() []netip.Prefix {
	return []netip.Prefix{netip.MustParsePrefix(VRFSegmentV4), netip.MustParsePrefix(VRFSegmentV6)}
}
