package lab

import (
	"fmt"
	"net"
	"net/netip"
)

// The address plan. Only 198.51.100.0/24 and 2001:db8::/32 are used, and
// only inside the lab's own namespaces; the root namespace gets
// RootIPv4/RootIPv6 on its leg and nothing else.
const (
	SegmentV4 = "198.51.100.0/25" // the L2 segment (a bridge)
	SegmentV6 = "2001:db8:1::/64"

	RouterIPv4 = "198.51.100.1"
	RouterIPv6 = "2001:db8:1::1"
	ClientIPv4 = "198.51.100.100"
	ClientIPv6 = "2001:db8:1::100"
	RootIPv4   = "198.51.100.126" // the API server listens here
	RootIPv6   = "2001:db8:1::fe"
	// The client's probe sources: the L2 monitors send probe n from the
	// (n mod 32)th of these, so that an answer read late names the probe
	// it answers (probe.Monitor). The client holds them (IPv6 ones
	// deprecated: never a connection's source), so a node's kernel that
	// sends an NA to one resolves it.
	ProbeSourcesV4 = "198.51.100.32/27"
	ProbeSourcesV6 = "2001:db8:1::1:0/123"

	// L2 LoadBalancer pool: inside the segment, held by nobody.
	L2PoolV4 = "198.51.100.64/27"
	L2PoolV6 = "2001:db8:1::64-2001:db8:1::7f"
	// BGP LoadBalancer pools.
	BGPPoolV4 = "198.51.100.128/27"
	BGPPoolV6 = "2001:db8:ff::/120"

	PodCIDRV4 = "198.51.100.160/27" // node N: 198.51.100.(160+8(N-1))/29
	PodCIDRV6 = "2001:db8:10::/48"  // node N: 2001:db8:10:N::/64

	// External client link behind the router.
	ExtLinkV4      = "198.51.100.192/28"
	ExtLinkV6      = "2001:db8:2::/64"
	RouterExtIPv4  = "198.51.100.193"
	RouterExtIPv6  = "2001:db8:2::1"
	ExternalIPv4   = "198.51.100.194"
	ExternalIPv6   = "2001:db8:2::2"
	ServiceCIDRV4  = "198.51.100.224/27"
	ServiceCIDRV6  = "2001:db8:5::/112"
	ServiceCIDRs   = ServiceCIDRV4 + "," + ServiceCIDRV6
	ClusterCIDRs   = PodCIDRV4 + "," + PodCIDRV6
	MaxNodes       = 4 // a /29 of pod addresses each in PodCIDRV4
	RouterASN      = 64512
	NodeASN        = 64513
	APIServerPort  = 6443 // the default for `herald-lab up`
	podPrefixLenV4 = 29
)

// Host names the lab's hosts go by in every method that takes a host:
// "router", "client", "ext", "bridge", "node1".."node4". "" or "root" is
// the root namespace.
const (
	Router   = "router"
	Client   = "client"
	External = "ext"
	Bridge   = "bridge"
	Root     = "root"
)

// Node is one Kubernetes node: a namespace on the segment running its own
// containerd, kubelet and kube-proxy, with a CNI bridge (cni0) for its
// pods.
type Node struct {
	Name  string // node1
	Index int    // 1
	NS    string // network namespace
	IPv4  netip.Addr
	IPv6  netip.Addr
	MAC   net.HardwareAddr // of eth0
	// LinkLocal is eth0's IPv6 link-local address.
	LinkLocal netip.Addr
	Pod       Pod
}

// Pod is a node's pod network: the CNI bridge's subnets.
type Pod struct {
	CIDRv4, CIDRv6 netip.Prefix
}

// NodeName is the name of node i (1-based).
func NodeName(i int) string { return fmt.Sprintf("node%d", i) }

// NodeIPv4 and the functions below give the plan's addresses for node i.
func NodeIPv4(i int) netip.Addr { return v4(10 + i) }

// NodeIPv6 is node i's segment address 2001:db8:1::1i.
func NodeIPv6(i int) netip.Addr { return netip.MustParseAddr(fmt.Sprintf("2001:db8:1::%d", 10+i)) }

// PodCIDRv4ForNode is node i's pod /29.
func PodCIDRv4ForNode(i int) netip.Prefix { return netip.PrefixFrom(v4(160+8*(i-1)), podPrefixLenV4) }

// PodCIDRv6ForNode is node i's pod /64.
func PodCIDRv6ForNode(i int) netip.Prefix {
	return netip.MustParsePrefix(fmt.Sprintf("2001:db8:10:%x::/64", i))
}

func v4(last int) netip.Addr { return netip.AddrFrom4([4]byte{198, 51, 100, byte(last)}) }

// planMAC is the MAC the lab gives the interface holding 198.51.100.last,
// so that a MAC on the segment says whose it is: 02:00:c6:33:64:<last>.
func planMAC(last byte) net.HardwareAddr { return net.HardwareAddr{0x02, 0x00, 198, 51, 100, last} }

func newNode(i int, runID string) Node {
	podV4 := PodCIDRv4ForNode(i)
	podV6 := PodCIDRv6ForNode(i)
	name := NodeName(i)
	return Node{
		Name: name, Index: i, NS: nsName(runID, name),
		IPv4: NodeIPv4(i), IPv6: NodeIPv6(i), MAC: planMAC(byte(10 + i)),
		Pod: Pod{CIDRv4: podV4, CIDRv6: podV6},
	}
}
