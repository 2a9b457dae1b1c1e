package main

import (
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/herald-lb/herald/internal/installation"
	"github.com/herald-lb/herald/internal/l2owner"
	"github.com/herald-lb/herald/internal/layer2"
	"github.com/herald-lb/herald/internal/members"
	"github.com/herald-lb/herald/internal/speaker"
)

type flags struct {
	nodeName, kubeconfig, namespace, metricsAddr, healthAddr, logLevel string
	lbClass, installation                                              string
	lbClassOnly                                                        bool
	profiling                                                          bool
	memberlist                                                         bool
	memberlistBindAddr, memberlistKeyFile, memberlistSecret            string
	memberlistPort                                                     int
	probeInterval, probeTimeout, gossipInterval                        time.Duration
	suspicionMult                                                      int
	releaseGrace, shutdownTimeout, leaseRenew, l2Refresh               time.Duration
	statusInterval, gracefulShutdownWait                               time.Duration
	podName, podUID, hostIP                                            string
	excludeInterfaces, memberlistTiming                                string
	timingSet                                                          map[string]bool
	ignoreExcludeLB                                                    bool
	bgpListenPort                                                      int
	bgpListenAddrs                                                     string
	bgpListen                                                          []netip.Addr
}

func parseFlags(args []string) (flags, error) {
	var f flags
	d := members.DefaultTiming()
	fs := flag.NewFlagSet("speaker", flag.ContinueOnError)
	fs.StringVar(&f.nodeName, "node-name", os.Getenv("NODE_NAME"), "the node this speaker runs on (default $NODE_NAME, set from the downward API)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "path of a kubeconfig file; empty: the in-cluster configuration")
	fs.StringVar(&f.namespace, "namespace", "herald-system", "Herald's namespace: the BGP password Secrets live there")
	fs.BoolVar(&f.ignoreExcludeLB, "ignore-exclude-lb", false, "let nodes labelled node.kubernetes.io/exclude-from-external-load-balancers announce (MetalLB's flag of the same name; must match the controller)")
	fs.BoolVar(&f.lbClassOnly, "lb-class-only", false, "announce only Services with spec.loadBalancerClass --lb-class (must match the controller)")
	fs.StringVar(&f.lbClass, "lb-class", "herald.dev/herald", "the spec.loadBalancerClass Herald answers to (must match the controller); Services of other classes are left alone")
	fs.StringVar(&f.installation, "installation", "", "this installation's name when several share the cluster (must match the controller): it reads only Herald objects labelled herald.dev/installation=<name> and writes the SpeakerStatus <node>.<name>; empty: the default installation")
	fs.StringVar(&f.hostIP, "host-ip", os.Getenv("HOST_IP"), "the node's own address (default $HOST_IP, set from the downward API status.hostIP): a --metrics-addr or --health-addr without a host listens on it alone; empty: on every local address")
	fs.StringVar(&f.metricsAddr, "metrics-addr", ":7472", "address of the Prometheus /metrics endpoint; without a host (\":7472\"), --host-ip's; \"0.0.0.0:7472\" or \"[::]:7472\": every local address (in kube-proxy's IPVS mode that includes every LoadBalancer address); empty disables it")
	fs.BoolVar(&f.profiling, "profiling", false, "also serve Go's profiles (net/http/pprof) under /debug/pprof/ on --metrics-addr")
	fs.StringVar(&f.healthAddr, "health-addr", ":7473", "address of the /healthz and /readyz endpoints, like --metrics-addr; empty disables them")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.BoolVar(&f.memberlist, "memberlist", true, "detect dead speakers with the member list (disable only for tests: failover then waits for a dead speaker's Lease to expire)")
	fs.StringVar(&f.memberlistBindAddr, "memberlist-bind-addr", "", "address the member list binds and advertises (default: the node's InternalIP)")
	fs.IntVar(&f.memberlistPort, "memberlist-port", 7947, "UDP and TCP port of the member list")
	fs.StringVar(&f.memberlistKeyFile, "memberlist-key-file", "/etc/herald/memberlist/key", "file holding the member list's encryption key (16, 24 or 32 bytes, raw or base64; or several base64 keys, one per line, the first used to send: key rotation), mounted from a Secret")
	fs.StringVar(&f.memberlistSecret, "memberlist-secret", "herald-memberlist", "the Secret in --namespace that --memberlist-key-file is mounted from (its key \"key\"): while the kubelet has not filled the volume yet, as right after an install, the speaker reads the key from the Secret itself; empty: the file only")
	fs.DurationVar(&f.probeInterval, "memberlist-probe-interval", d.ProbeInterval, "interval between liveness probes; larger is lighter on big clusters but detects a dead node later")
	fs.DurationVar(&f.probeTimeout, "memberlist-probe-timeout", d.ProbeTimeout, "time to wait for a probe's answer before probing indirectly")
	fs.IntVar(&f.suspicionMult, "memberlist-suspicion-mult", d.SuspicionMult, "how many probe intervals (scaled by log n) a suspected node has to refute before it is declared dead")
	fs.DurationVar(&f.gossipInterval, "memberlist-gossip-interval", d.GossipInterval, "interval between gossip rounds")
	fs.StringVar(&f.memberlistTiming, "memberlist-timing", "default", "member-list timing preset: default (a dead node noticed in about 0.3 s on a small cluster), large (about 1 s on a few nodes, 2-3 s at 200; less probe traffic and fewer false alarms on big or busy clusters) or large-fast (about 1-1.5 s at 200, for speakers that keep their CPU request; not for nodes where they may be starved); the --memberlist-* flags override single values")
	fs.StringVar(&f.excludeInterfaces, "l2-exclude-interfaces", strings.Join(layer2.DefaultExcludeInterfaces(), ","), "comma-separated interface name patterns never used by default for ARP/NDP (an L2Advertisement's interfaces override them)")
	fs.DurationVar(&f.releaseGrace, "release-grace", l2owner.ReleaseGrace, "how long a node that lost an address keeps answering for it while the new owner takes over")
	fs.DurationVar(&f.l2Refresh, "l2-refresh", layer2.DefaultRefresh, "how often every address announced in L2 mode is announced again (one gratuitous ARP / unsolicited NA): two nodes answering for one address hear each other and the fence stops one; stale client caches heal. Negative disables it, and with it the fence")
	fs.DurationVar(&f.leaseRenew, "lease-renew", speaker.DefaultLeaseRenew, "how often the speaker renews its liveness Lease herald-speaker-<node> once synced (it lasts three renewals): one API write per renewal per node")
	fs.DurationVar(&f.statusInterval, "status-interval", speaker.DefaultStatusInterval, "least time between two writes of this node's SpeakerStatus (written only when what the node announces changed; changes within the interval become one write)")
	fs.StringVar(&f.podName, "pod-name", os.Getenv("POD_NAME"), "this speaker's Pod, shown in its SpeakerStatus (default $POD_NAME, set from the downward API)")
	fs.StringVar(&f.podUID, "pod-uid", os.Getenv("POD_UID"), "this speaker's Pod's UID, so that kubectl describe pod shows the events about its start (default $POD_UID, set from the downward API)")
	fs.IntVar(&f.bgpListenPort, "bgp-listen-port", 179, "TCP port the speaker listens on for routers that connect to it (BGPPeers with passive: true); nothing listens while no peer of the node is passive")
	fs.StringVar(&f.bgpListenAddrs, "bgp-listen-addresses", "", "comma-separated addresses the passive-peer listener binds; empty: the node's own addresses (its InternalIPs), not every local address, so another BGP daemon on the node can keep the others")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 10*time.Second, "bound on the hand-over and BGP withdrawal at SIGTERM")
	fs.DurationVar(&f.gracefulShutdownWait, "graceful-shutdown-wait", speaker.DefaultGracefulShutdownWait, "how long a node that drains (label herald.dev/drain) or stops (SIGTERM) keeps its BGP paths, sent with the GRACEFUL_SHUTDOWN community 65535:0 and, on iBGP sessions, LOCAL_PREF 1, before it withdraws them, so that routers move new flows to other nodes first; 0 withdraws at once; must be below --shutdown-timeout")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if _, err := installation.Parse(f.installation); err != nil {
		return f, err
	}
	if _, err := members.Preset(f.memberlistTiming); err != nil {
		return f, fmt.Errorf("--memberlist-timing: %w", err)
	}
	if f.statusInterval < 100*time.Millisecond {
		return f, fmt.Errorf("--status-interval %s: want at least 100ms", f.statusInterval)
	}
	if f.gracefulShutdownWait < 0 || (f.gracefulShutdownWait > 0 && f.gracefulShutdownWait >= f.shutdownTimeout) {
		return f, fmt.Errorf("--graceful-shutdown-wait %s: want 0 or more, and below --shutdown-timeout %s", f.gracefulShutdownWait, f.shutdownTimeout)
	}
	if f.leaseRenew < time.Second {
		return f, fmt.Errorf("--lease-renew %s: want at least 1s", f.leaseRenew)
	}
	var err error
	if f.bgpListen, err = listenFlags(f.bgpListenPort, f.bgpListenAddrs); err != nil {
		return f, err
	}
	if f.metricsAddr, err = onHost(f.metricsAddr, f.hostIP); err != nil {
		return f, fmt.Errorf("--metrics-addr: %w", err)
	}
	if f.healthAddr, err = onHost(f.healthAddr, f.hostIP); err != nil {
		return f, fmt.Errorf("--health-addr: %w", err)
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	f.timingSet = set
	if f.nodeName == "" {
		fmt.Fprintln(os.Stderr, "speaker: --node-name (or $NODE_NAME) is required")
		return f, fmt.Errorf("no node name")
	}
	return f, nil
}

// pauseAfter is how long the speaker may go unscheduled before the others
// may have taken its L2 addresses over (layer2.Config.PauseAfter): the
// member list's quickest detection; 0 without a member list (a dead
// speaker's addresses then move when its Lease expires, seconds later).
func (f flags) pauseAfter() time.Duration {
	if !f.memberlist {
		return 0
	}
	return f.timing().MinDetection()
}

// timing is the preset, with the single values given on the command line.
func (f flags) timing() members.Timing {
	t, err := members.Preset(f.memberlistTiming)
	if err != nil { // parseFlags refused it
		t = members.DefaultTiming()
	}
	if f.timingSet["memberlist-probe-interval"] {
		t.ProbeInterval = f.probeInterval
	}
	if f.timingSet["memberlist-probe-timeout"] {
		t.ProbeTimeout = f.probeTimeout
	}
	if f.timingSet["memberlist-suspicion-mult"] {
		t.SuspicionMult = f.suspicionMult
	}
	if f.timingSet["memberlist-gossip-interval"] {
		t.GossipInterval = f.gossipInterval
	}
	return t
}

// excluded returns the interface exclusion patterns.
func (f flags) excluded() []string {
	var out []string
	for _, p := range strings.Split(f.excludeInterfaces, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// listenFlags checks --bgp-listen-port and parses --bgp-listen-addresses.
func listenFlags(port int, addrs string) ([]netip.Addr, error) {
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("--bgp-listen-port %d: want 1-65535", port)
	}
	var out []netip.Addr
	for _, a := range strings.Split(addrs, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return nil, fmt.Errorf("--bgp-listen-addresses: %q is not an IP address", a)
		}
		out = append(out, ip)
	}
	return out, nil
}

// onHost puts hostIP into a listen address that names a port only
// (":7472"), so that the endpoint answers on the node's own address and
// not on every local one. An empty address (endpoint disabled), one with a
// host, or an empty hostIP leave it as it is.
func onHost(addr, hostIP string) (string, error) {
	if addr == "" {
		return "", nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%q: %w", addr, err)
	}
	if host != "" || hostIP == "" {
		return addr, nil
	}
	ip, err := netip.ParseAddr(hostIP)
	if err != nil {
		return "", fmt.Errorf("--host-ip %q: %w", hostIP, err)
	}
	return net.JoinHostPort(ip.String(), port), nil
}
