package layer2

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// dumpRetries bounds the retries of a netlink dump that keeps being
// interrupted by concurrent changes.
const dumpRetries = 10

// subscription holds the netlink link, address and route subscriptions.
type subscription struct {
	links  chan netlink.LinkUpdate
	addrs  chan netlink.AddrUpdate
	routes chan netlink.RouteUpdate
	done   chan struct{}
	// failed receives the first error any subscription reports.
	failed chan error
	// open counts the subscriptions whose channels will be closed on stop.
	open []func()
}

func subscribe() (*subscription, error) {
	s := &subscription{
		links:  make(chan netlink.LinkUpdate, 256),
		addrs:  make(chan netlink.AddrUpdate, 256),
		routes: make(chan netlink.RouteUpdate, 256),
		done:   make(chan struct{}),
		failed: make(chan error, 1),
	}
	onError := func(err error) {
		select {
		case s.failed <- err:
		default:
		}
	}
	// No ListExisting: relist dumps on sockets of its own right after.
	// A dump sent on a subscribed socket is addressed to its multicast
	// groups, which rtnetlink allows only with CAP_NET_ADMIN, and the
	// speaker runs without it (docs/security.md).
	const rcvbuf = 1 << 20
	err := netlink.LinkSubscribeWithOptions(s.links, s.done, netlink.LinkSubscribeOptions{
		ErrorCallback: onError, ReceiveBufferSize: rcvbuf})
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("subscribe to links: %w", err)
	}
	s.open = append(s.open, func() { drain(s.links) })
	err = netlink.AddrSubscribeWithOptions(s.addrs, s.done, netlink.AddrSubscribeOptions{
		ErrorCallback: onError, ReceiveBufferSize: rcvbuf})
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("subscribe to addresses: %w", err)
	}
	s.open = append(s.open, func() { drain(s.addrs) })
	err = netlink.RouteSubscribeWithOptions(s.routes, s.done, netlink.RouteSubscribeOptions{
		ErrorCallback: onError, ReceiveBufferSize: rcvbuf})
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("subscribe to routes: %w", err)
	}
	s.open = append(s.open, func() { drain(s.routes) })
	return s, nil
}

// stop ends the subscriptions and waits for their goroutines, which block
// on a full channel until it is drained.
func (s *subscription) stop() {
	close(s.done)
	for _, d := range s.open {
		d()
	}
}

func drain[T any](ch <-chan T) {
	for range ch {
	}
}

// relist rebuilds the link table from full dumps, so that nothing missed
// while a subscription was down survives.
func relist(t *linkTable) error {
	links, err := retryDump(netlink.LinkList)
	if err != nil {
		return fmt.Errorf("list links: %w", err)
	}
	addrs, err := retryDump(func() ([]netlink.Addr, error) { return netlink.AddrList(nil, netlink.FAMILY_ALL) })
	if err != nil {
		return fmt.Errorf("list addresses: %w", err)
	}
	defaults, err := dumpDefaultRoutes()
	if err != nil {
		return err
	}
	seen := map[int]bool{}
	for _, l := range links {
		info := linkInfoOf(l)
		t.setLink(info)
		seen[info.index] = true
		t.addrs[info.index] = nil
	}
	for index := range t.links {
		if !seen[index] {
			t.deleteLink(index)
		}
	}
	for _, a := range addrs {
		if p, ok := prefixOf(*a.IPNet); ok && seen[a.LinkIndex] && usableAddr(a.Flags) {
			t.setAddr(a.LinkIndex, p, true)
		}
	}
	t.defaults = defaults
	t.listed = true
	return nil
}

// dumpDefaultRoutes lists the main table's default routes per family.
func dumpDefaultRoutes() (DefaultRoutes, error) {
	var d DefaultRoutes
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		routes, err := retryDump(func() ([]netlink.Route, error) {
			return netlink.RouteListFiltered(family, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
		})
		if err != nil {
			return d, fmt.Errorf("list routes (family %d): %w", family, err)
		}
		for _, r := range routes {
			if !isDefaultRoute(r) {
				continue
			}
			if family == netlink.FAMILY_V4 {
				d.V4 = append(d.V4, routeLinks(r)...)
			} else {
				d.V6 = append(d.V6, routeLinks(r)...)
			}
		}
	}
	return d, nil
}

// retryDump repeats a netlink dump that was interrupted by a concurrent
// change: its partial result must not be taken as complete.
func retryDump[T any](dump func() ([]T, error)) ([]T, error) {
	var err error
	for range dumpRetries {
		var out []T
		out, err = dump()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return out, err
		}
	}
	return nil, err
}
