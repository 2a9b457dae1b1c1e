package lab

import (
	"context"
	"fmt"
	"strings"
)

// The unnumbered links (AddUnnumberedLinks): one veth pair per node from
// the router namespace, UnnumberedRouterIf(node) there, to the node,
// UnnumberedNodeIf there, with no address but the kernel's IPv6
// link-local ones. FRR peers on each (BGPOptions.Unnumbered) as on a
// fabric's point-to-point links.
const (
	UnnumberedNodeIf   = "p2p0"
	unnumberedIfPrefix = "p2p-"
)

// UnnumberedRouterIf is the router's end of node's unnumbered link.
func UnnumberedRouterIf(node string) string { return unnumberedIfPrefix + node }

// nodeOfUnnumberedIf names the node a router interface leads to, or "".
func (nw *Network) nodeOfUnnumberedIf(dev string) string {
	name, ok := strings.CutPrefix(dev, unnumberedIfPrefix)
	if !ok {
		return ""
	}
	for _, n := range nw.nodes {
		if n.Name == name {
			return name
		}
	}
	return ""
}

// AddUnnumberedLinks wires every node to the router with a point-to-point
// link carrying IPv6 link-local addresses only (the namespaces' sysctls
// leave DAD and RA acceptance off). The lab's other links and routes do
// not change; RemoveUnnumberedLinks takes them away.
func (nw *Network) AddUnnumberedLinks(ctx context.Context) error {
	var links []string
	for _, n := range nw.nodes {
		links = append(links, fmt.Sprintf("link add %s netns %s type veth peer name %s netns %s",
			UnnumberedRouterIf(n.Name), nw.ns(Router), UnnumberedNodeIf, n.NS))
	}
	if err := ipBatch(ctx, "", links); err != nil {
		return fmt.Errorf("unnumbered links: %w", err)
	}
	var up []string
	for _, n := range nw.nodes {
		up = append(up, "link set "+UnnumberedRouterIf(n.Name)+" up")
		if err := ipBatch(ctx, n.NS, []string{"link set " + UnnumberedNodeIf + " up"}); err != nil {
			return fmt.Errorf("unnumbered link of %s: %w", n.Name, err)
		}
	}
	return ipBatch(ctx, nw.ns(Router), up)
}

// RemoveUnnumberedLinks deletes the links AddUnnumberedLinks made (either
// end takes its pair along); missing ones are no error.
func (nw *Network) RemoveUnnumberedLinks(ctx context.Context) error {
	for _, n := range nw.nodes {
		_, err := run(ctx, "ip", "-n", nw.ns(Router), "link", "del", UnnumberedRouterIf(n.Name))
		if err != nil && !strings.Contains(err.Error(), "Cannot find device") {
			return fmt.Errorf("unnumbered link of %s: %w", n.Name, err)
		}
	}
	return nil
}

// SetUnnumberedLink takes node's unnumbered link down or up at the
// router's end.
func (nw *Network) SetUnnumberedLink(ctx context.Context, node string, up bool) error {
	n, err := nw.Node(node)
	if err != nil {
		return err
	}
	_, err = run(ctx, "ip", "-n", nw.ns(Router), "link", "set", UnnumberedRouterIf(n.Name), upDown(up))
	return err
}
