package lab

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// DescriptionFile is the name, in the run directory, of the text Describe
// wrote when the lab came up (`herald-lab status` prints it again).
const DescriptionFile = "lab.txt"

// Describe tells a human where everything is and how to use it.
func (l *Lab) Describe(w io.Writer) error {
	var b strings.Builder
	proxy := "kube-proxy " + string(l.opts.ProxyMode)
	if l.opts.NoKubeProxy {
		proxy = "no kube-proxy"
	}
	fmt.Fprintf(&b, "Herald lab %s is up: a %d-node Kubernetes cluster (containerd + kubelet per node), %s router, %s. State and logs: %s\n\n", l.id, len(l.nodes), l.RouterKind(), proxy, l.dir)
	fmt.Fprintf(&b, "Kubernetes API  %s (kube-apiserver %s, etcd on 127.0.0.1; kube-controller-manager and kube-scheduler beside it)\n", l.APIServerURL(), "bound to "+RootIPv4+" only")
	fmt.Fprintf(&b, "  export KUBECONFIG=%s\n", l.adminKubeconfig)
	fmt.Fprintf(&b, "  (works in the root namespace and inside every lab namespace; kube-proxy's: %s)\n\n", l.proxyKubeconfig)
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tNAMESPACE\tIPv4\tIPv6\tMAC")
	row := func(host, ns, v4, v6, mac string) { fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", host, ns, v4, v6, mac) }
	row(Router, l.ns(Router), RouterIPv4+", "+RouterExtIPv4, RouterIPv6+", "+RouterExtIPv6, planMAC(1).String())
	for _, n := range l.nodes {
		row(n.Name, n.NS, n.IPv4.String(), n.IPv6.String(), n.MAC.String())
	}
	row(Client, l.ns(Client), ClientIPv4, ClientIPv6, planMAC(100).String())
	row(External, l.ns(External), ExternalIPv4+" (behind router)", ExternalIPv6, planMAC(194).String())
	for _, n := range l.nodes {
		row("pods on "+n.Name, "cni0 in "+n.NS, n.Pod.CIDRv4.String(), n.Pod.CIDRv6.String(), "containerd + kubelet")
	}
	row("root leg", rootLinkName(l.id)+" (root ns)", RootIPv4, RootIPv6, planMAC(126).String())
	row(Bridge, l.ns(Bridge), "br0: the L2 segment", SegmentV4, SegmentV6)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\nPools: L2 %s and %s; BGP %s and %s. Services: %s.\n", L2PoolV4, L2PoolV6, BGPPoolV4, BGPPoolV6, ServiceCIDRs)
	cfg := l.RouterConfig()
	fmt.Fprintf(&b, "Router: AS %d; nodes AS %d, accepted from %s and %s (listen ranges)", cfg.ASN, cfg.PeerASN, SegmentV4, SegmentV6)
	if len(cfg.Neighbors) > 0 {
		fmt.Fprintf(&b, ", %d static neighbors", len(cfg.Neighbors))
	}
	fmt.Fprintf(&b, ".\n  %s -c 'show bgp summary'   (BIRD: birdc ... show protocols)\n", l.RouterShellHint())
	fmt.Fprintf(&b, "\nEnter a host:    ip netns exec %s bash     (any namespace above)\n", l.ns("node1"))
	fmt.Fprintf(&b, "Try:             kubectl get nodes,pods -A -o wide\n")
	fmt.Fprintf(&b, "Containers:      ctr --address %s -n k8s.io tasks ls\n", filepath.Join(l.nodeDir(l.nodes[0]), "containerd.sock"))
	fmt.Fprintf(&b, "Logs:            %s\n", filepath.Join(l.dir, "logs"))
	fmt.Fprintf(&b, "Stop everything: make lab-down\n")
	_, err := io.WriteString(w, b.String())
	return err
}
