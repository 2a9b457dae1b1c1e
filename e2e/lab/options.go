package lab

import (
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strconv"
	"time"

	"github.com/herald-lb/herald/e2e/lab/routerconf"
)

// RouterKind selects the router implementation.
type RouterKind = routerconf.Kind

// Router implementations.
const (
	FRR  = routerconf.FRR
	BIRD = routerconf.BIRD
)

// ProxyMode is kube-proxy's --proxy-mode.
type ProxyMode string

// kube-proxy modes that work on this kernel (no IPVS).
const (
	NFTables ProxyMode = "nftables"
	IPTables ProxyMode = "iptables"
)

// CPUSharesEnv names the environment variable that sets Options.CPUShares
// for every lab a test binary starts (the Makefile's way through go test).
const CPUSharesEnv = "HERALD_LAB_CPU_SHARES"

// HolderEnv names the environment variable through which a test tells
// `herald-demo` its PID, for Options.HolderPID.
const HolderEnv = "HERALD_LAB_HOLDER_PID"

// Options shape a lab. The zero value is a 3-node lab with FRR, kube-proxy
// in nftables mode and the API server on a free port.
type Options struct {
	// Nodes is the number of nodes (1..4, default 3).
	Nodes int
	// Router is the router implementation (default FRR).
	Router RouterKind
	// BGP configures the router's sessions.
	BGP BGPOptions
	// APIServerPort for kube-apiserver on 198.51.100.126; 0 picks a free
	// port (`herald-lab up` uses 6443).
	APIServerPort int
	// ProxyMode of kube-proxy (default nftables).
	ProxyMode ProxyMode
	// NoKubeProxy skips kube-proxy (a lab for L2/BGP control-plane tests only).
	NoKubeProxy bool
	// ExtraPodPorts are served by every pod besides 8080 and 8443.
	ExtraPodPorts []int
	// ProbeWindow is how long ARPProbe and NDPProbe wait for answers
	// (default 300ms).
	ProbeWindow time.Duration
	// RunID names this run (4 lowercase letters or digits); default random.
	RunID string
	// StateRoot is where run directories live (default /run/herald-lab).
	StateRoot string
	// Detached leaves every process running when the caller exits
	// (`herald-lab up`); the default ties them to the caller's life.
	Detached bool
	// HolderPID, with Detached, is a process the lab is kept for after
	// Release: once it exits the lab counts as a leftover that the next
	// lab removes (a test running `make demo`; see HolderEnv).
	HolderPID int
	// CPUShares is the CPU weight (cgroup v1 cpu.shares, 2..262144) of
	// each of the lab's cgroups (labCPUShares); default from CPUSharesEnv,
	// else 262144. `make e2e E2E_LINES=2` gives the labs of the line
	// beside the L2 one a 16th of the L2 line's weight.
	CPUShares int
	// VRF, when set, gives every node a second uplink to the router
	// enslaved to a VRF device of this name, which the router accepts
	// sessions from (vrf.go; AddVRFUplinks does it in a running lab).
	// Default: none.
	VRF string
	// NoInstall refuses to apt-get missing packages (default: install).
	NoInstall bool
	// Logger receives progress; default: discard.
	Logger *slog.Logger
}

// BGPOptions configure the router.
type BGPOptions struct {
	// ASN of the router (default 64512) and of the nodes (default 64513;
	// equal to ASN for iBGP, which is where local-pref survives).
	ASN, NodeASN uint32
	// StaticNeighbors are configured per node on top of the listen ranges
	// (which accept every node without them). GoBGP v4.8.0's BFD needs
	// them: see docs/gobgp.md, BFD.
	StaticNeighbors []StaticNeighbor
	// BFD timers of the router's profile (default 300/300 ms x 3).
	BFD routerconf.BFD
	// ListenRangeBFD attaches BFD to the listen ranges too.
	ListenRangeBFD bool
	// HoldTime and Keepalive in seconds (default 9 and 3).
	HoldTime, Keepalive int
	// Unnumbered makes the router (FRR only) peer on its end of every
	// node's unnumbered link (AddUnnumberedLinks), "neighbor IF interface",
	// beside the listen ranges, sending Router Advertisements there.
	Unnumbered bool
	// UnnumberedBFD attaches the router's BFD profile to those interface
	// neighbors.
	UnnumberedBFD bool
	// NodeRouters runs a BIRD in every node's namespace (default none):
	// it peers with the router from the node's address as AS NodeASN and
	// with Herald over loopback (noderouter.go), so that Herald's routes
	// reach the router through it.
	NodeRouters bool
}

// StaticNeighbor is a router-side neighbor for one node.
type StaticNeighbor struct {
	Node string // node1
	// IPv6 peers with the node's IPv6 address instead of its IPv4 one.
	IPv6 bool
	BFD  bool
	// Password enables TCP MD5 (one word).
	Password string
	// RouterDials makes the router connect too (default passive).
	RouterDials bool
}

// withDefaults fills in defaults and checks the options.
func (o Options) withDefaults() (Options, error) {
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Nodes < 1 || o.Nodes > MaxNodes {
		return o, fmt.Errorf("options: Nodes = %d, want 1..%d", o.Nodes, MaxNodes)
	}
	if o.Router == "" {
		o.Router = FRR
	}
	if o.Router != FRR && o.Router != BIRD {
		return o, fmt.Errorf("options: Router = %q, want %q or %q", o.Router, FRR, BIRD)
	}
	if o.ProxyMode == "" {
		o.ProxyMode = NFTables
	}
	if o.ProxyMode != NFTables && o.ProxyMode != IPTables {
		return o, fmt.Errorf("options: ProxyMode = %q, want nftables or iptables (no IPVS on this kernel)", o.ProxyMode)
	}
	if o.CPUShares == 0 {
		o.CPUShares = labCPUShares
		if v := os.Getenv(CPUSharesEnv); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return o, fmt.Errorf("options: %s=%q: not a number", CPUSharesEnv, v)
			}
			o.CPUShares = n
		}
	}
	if o.CPUShares < 2 || o.CPUShares > labCPUShares {
		return o, fmt.Errorf("options: CPUShares = %d, want 2..%d", o.CPUShares, labCPUShares)
	}
	if o.ProbeWindow == 0 {
		o.ProbeWindow = 300 * time.Millisecond
	}
	if o.StateRoot == "" {
		o.StateRoot = DefaultStateRoot
	}
	if o.RunID != "" && !validRunID(o.RunID) {
		return o, fmt.Errorf("options: RunID %q: want 4 lowercase letters or digits", o.RunID)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	for _, p := range o.ExtraPodPorts {
		if p <= 0 || p > 65535 || p == 8080 || p == 8443 {
			return o, fmt.Errorf("options: ExtraPodPorts: %d is not a free TCP port", p)
		}
	}
	return o, nil
}

// RouterConfig is the router configuration the options describe.
func (o Options) RouterConfig() (routerconf.Config, error) {
	b := o.BGP
	c := routerconf.Config{
		RouterID: netip.MustParseAddr(RouterIPv4), ASN: b.ASN, PeerASN: b.NodeASN,
		ListenRanges:   []netip.Prefix{netip.MustParsePrefix(SegmentV4), netip.MustParsePrefix(SegmentV6)},
		ListenRangeBFD: b.ListenRangeBFD, BFD: b.BFD, HoldTime: b.HoldTime, Keepalive: b.Keepalive,
		MaxPaths: MaxNodes,
	}
	if o.VRF != "" {
		c.ListenRanges = append(c.ListenRanges, vrfListenRanges()...)
	}
	if c.ASN == 0 {
		c.ASN = RouterASN
	}
	if c.PeerASN == 0 {
		c.PeerASN = NodeASN
	}
	if c.BFD == (routerconf.BFD{}) {
		c.BFD = routerconf.BFD{TransmitMS: 300, ReceiveMS: 300, Multiplier: 3}
	}
	if c.HoldTime == 0 && c.Keepalive == 0 {
		c.HoldTime, c.Keepalive = 9, 3
	}
	if b.Unnumbered {
		if o.Router != FRR {
			return c, fmt.Errorf("unnumbered peering: the lab renders it for FRR only, not %s", o.Router)
		}
		for i := 1; i <= o.Nodes; i++ {
			c.Interfaces = append(c.Interfaces, UnnumberedRouterIf(NodeName(i)))
		}
		c.InterfaceBFD = b.UnnumberedBFD
	}
	for _, s := range b.StaticNeighbors {
		i, err := nodeIndex(s.Node, o.Nodes)
		if err != nil {
			return c, fmt.Errorf("static neighbor: %w", err)
		}
		addr := NodeIPv4(i)
		if s.IPv6 {
			addr = NodeIPv6(i)
		}
		c.Neighbors = append(c.Neighbors, routerconf.Neighbor{Address: addr, BFD: s.BFD, Password: s.Password, Active: s.RouterDials})
	}
	return c, c.Validate()
}

func nodeIndex(name string, nodes int) (int, error) {
	var i int
	if _, err := fmt.Sscanf(name, "node%d", &i); err != nil || i < 1 || i > nodes || NodeName(i) != name {
		return 0, fmt.Errorf("no node %q in a %d-node lab", name, nodes)
	}
	return i, nil
}

// validRunID: 4 lowercase letters or digits.
func validRunID(id string) bool {
	if len(id) != runIDLen {
		return false
	}
	for _, c := range id {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
