package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// linkLocal returns dev's IPv6 link-local address in ns.
func linkLocal(ctx context.Context, ns, dev string) (netip.Addr, error) {
	out, err := run(ctx, "ip", "-n", ns, "-j", "-6", "addr", "show", "dev", dev, "scope", "link")
	if err != nil {
		return netip.Addr{}, err
	}
	var links []struct {
		AddrInfo []struct {
			Local string `json:"local"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil {
		return netip.Addr{}, fmt.Errorf("parsing ip addr of %s in %s: %w", dev, ns, err)
	}
	for _, l := range links {
		for _, a := range l.AddrInfo {
			if ip, err := netip.ParseAddr(a.Local); err == nil {
				return ip, nil
			}
		}
	}
	return netip.Addr{}, fmt.Errorf("%s in %s has no link-local address", dev, ns)
}

// SetLink takes a node's cable out or puts it back: its port on the
// bridge goes down or up. The node's own eth0 stays up and keeps its
// addresses and routes; it sees carrier loss, as with a pulled cable.
func (nw *Network) SetLink(ctx context.Context, node string, up bool) error {
	n, err := nw.Node(node)
	if err != nil {
		return err
	}
	_, err = run(ctx, "ip", "-n", nw.ns(Bridge), "link", "set", n.Name, upDown(up))
	return err
}

// SetNodeLink sets the node's own eth0 down or up. The kernel drops the
// IPv4 routes through a downed interface (IPv6 addresses stay:
// keep_addr_on_down), so bringing it up restores the node's routes.
func (nw *Network) SetNodeLink(ctx context.Context, node string, up bool) error {
	n, err := nw.Node(node)
	if err != nil {
		return err
	}
	if _, err := run(ctx, "ip", "-n", n.NS, "link", "set", "eth0", upDown(up)); err != nil || !up {
		return err
	}
	return ipBatch(ctx, n.NS, nw.nodeRoutes(n))
}

func upDown(up bool) string {
	if up {
		return "up"
	}
	return "down"
}

// Ping sends one ICMP echo from host to addr and waits up to a second.
func (nw *Network) Ping(ctx context.Context, host string, addr netip.Addr) error {
	_, err := nw.Exec(ctx, host, "ping", "-n", "-q", "-c", "1", "-W", "1", addr.String())
	return err
}

// NeighborEntry is a host's neighbor cache entry (ARP or NDP).
type NeighborEntry struct {
	Addr netip.Addr
	MAC  net.HardwareAddr
	// Node owning MAC on the segment ("node2", "router"...), or "".
	Node  string
	State []string // REACHABLE, STALE, PERMANENT, FAILED...
}

// Neighbor reads host's neighbor entry for addr on eth0; a missing entry
// is an empty NeighborEntry and no error.
func (nw *Network) Neighbor(ctx context.Context, host string, addr netip.Addr) (NeighborEntry, error) {
	out, err := nw.Exec(ctx, host, "ip", "-j", "neigh", "show", "to", addr.String(), "dev", "eth0")
	if err != nil {
		return NeighborEntry{}, err
	}
	var entries []struct {
		Dst    string   `json:"dst"`
		LLAddr string   `json:"lladdr"`
		State  []string `json:"state"`
	}
	if err := json.Unmarshal([]byte(out), &entries); err != nil {
		return NeighborEntry{}, fmt.Errorf("parsing ip neigh of %s: %w", host, err)
	}
	for _, e := range entries {
		if e.Dst != addr.String() {
			continue
		}
		ne := NeighborEntry{Addr: addr, State: e.State}
		if mac, err := net.ParseMAC(e.LLAddr); err == nil {
			ne.MAC, ne.Node = mac, nw.NodeOfMAC(mac)
		}
		return ne, nil
	}
	return NeighborEntry{}, nil
}

// SetNeighbor pins host's neighbor entry for addr on eth0 to mac
// (PERMANENT), e.g. to send VIP traffic to one node without Herald.
func (nw *Network) SetNeighbor(ctx context.Context, host string, addr netip.Addr, mac net.HardwareAddr) error {
	_, err := nw.Exec(ctx, host, "ip", "neigh", "replace", addr.String(), "lladdr", mac.String(), "dev", "eth0", "nud", "permanent")
	return err
}

// DeleteNeighbor removes host's neighbor entry for addr (no error if none).
func (nw *Network) DeleteNeighbor(ctx context.Context, host string, addr netip.Addr) error {
	_, err := nw.Exec(ctx, host, "ip", "neigh", "del", addr.String(), "dev", "eth0")
	if err != nil && strings.Contains(err.Error(), "No such file") {
		return nil
	}
	return err
}

// ReplaceRoute sets a static route in host's namespace to prefix via one
// or more next hops (several make an ECMP route).
func (nw *Network) ReplaceRoute(ctx context.Context, host string, prefix netip.Prefix, via ...netip.Addr) error {
	if len(via) == 0 {
		return fmt.Errorf("route %s in %s: no next hop", prefix, host)
	}
	argv := []string{"ip", "route", "replace", prefix.String()}
	if len(via) == 1 {
		argv = append(argv, "via", via[0].String())
	} else {
		for _, v := range via {
			argv = append(argv, "nexthop", "via", v.String())
		}
	}
	_, err := nw.Exec(ctx, host, argv...)
	return err
}

// DeleteRoute removes host's route to prefix.
func (nw *Network) DeleteRoute(ctx context.Context, host string, prefix netip.Prefix) error {
	_, err := nw.Exec(ctx, host, "ip", "route", "del", prefix.String())
	return err
}
