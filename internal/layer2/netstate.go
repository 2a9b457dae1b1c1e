package layer2

import (
	"maps"
	"net"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// linkInfo is what the announcer remembers about one link.
type linkInfo struct {
	name   string
	index  int
	up     bool
	master int
	mac    string
	// gen changes whenever the link appears or goes down, so that a link
	// that went down and up again gets fresh sockets even when both events
	// were handled in one batch.
	gen uint64
}

// linkIdent identifies one incarnation of a link: responders are recreated
// when it changes.
type linkIdent struct {
	index int
	mac   string
	gen   uint64
}

// netState is an immutable snapshot of the links, for one reconcile.
type netState struct {
	links    []Link // sorted by index
	defaults DefaultRoutes
	ident    map[string]linkIdent // by link name
}

// linkTable is the netlink-fed model of the node's links, addresses and
// default routes. It is owned by the Run goroutine.
type linkTable struct {
	links    map[int]linkInfo
	addrs    map[int]map[netip.Prefix]struct{}
	defaults DefaultRoutes
	lastGen  uint64
	// listed is true once a full relist succeeded.
	listed bool
	// refreshRoutes asks for a dump of the default routes after the
	// current batch of updates.
	refreshRoutes bool
}

func newLinkTable() *linkTable {
	return &linkTable{links: map[int]linkInfo{}, addrs: map[int]map[netip.Prefix]struct{}{}}
}

// setLink records a link and reports whether its up state changed.
func (t *linkTable) setLink(l linkInfo) (upChanged bool) {
	old, known := t.links[l.index]
	l.gen = old.gen
	if !known || (old.up && !l.up) {
		t.lastGen++
		l.gen = t.lastGen
	}
	t.links[l.index] = l
	return !known || old.up != l.up
}

func (t *linkTable) deleteLink(index int) {
	delete(t.links, index)
	delete(t.addrs, index)
}

func (t *linkTable) setAddr(index int, p netip.Prefix, present bool) {
	if !present {
		delete(t.addrs[index], p)
		return
	}
	if t.addrs[index] == nil {
		t.addrs[index] = map[netip.Prefix]struct{}{}
	}
	t.addrs[index][p] = struct{}{}
}

// apply records one netlink update.
func (t *linkTable) apply(ev any) {
	switch u := ev.(type) {
	case netlink.LinkUpdate:
		info := linkInfoOf(u.Link)
		if u.Header.Type == unix.RTM_DELLINK {
			t.deleteLink(info.index)
			t.refreshRoutes = true
			return
		}
		if t.setLink(info) {
			t.refreshRoutes = true
		}
	case netlink.AddrUpdate:
		if p, ok := prefixOf(u.LinkAddress); ok {
			t.setAddr(u.LinkIndex, p, u.NewAddr && usableAddr(u.Flags))
		}
	case netlink.RouteUpdate:
		if isDefaultRoute(u.Route) {
			t.refreshRoutes = true
		}
	}
}

func (t *linkTable) snapshot() netState {
	s := netState{
		defaults: DefaultRoutes{V4: slices.Clone(t.defaults.V4), V6: slices.Clone(t.defaults.V6)},
		ident:    map[string]linkIdent{},
	}
	for _, index := range slices.Sorted(maps.Keys(t.links)) {
		l := t.links[index]
		addrs := slices.SortedFunc(maps.Keys(t.addrs[index]), func(a, b netip.Prefix) int {
			return a.Addr().Compare(b.Addr())
		})
		s.links = append(s.links, Link{Name: l.name, Index: l.index, Up: l.up, MasterIndex: l.master, Addrs: addrs})
		s.ident[l.name] = linkIdent{index: l.index, mac: l.mac, gen: l.gen}
	}
	return s
}

// linkInfoOf converts a netlink link. Up means administratively up with
// carrier (IFF_UP and IFF_RUNNING).
func linkInfoOf(l netlink.Link) linkInfo {
	a := l.Attrs()
	return linkInfo{
		name:   a.Name,
		index:  a.Index,
		up:     a.Flags&net.FlagUp != 0 && a.Flags&net.FlagRunning != 0,
		master: a.MasterIndex,
		mac:    a.HardwareAddr.String(),
	}
}

// prefixOf converts a netlink address.
func prefixOf(ipn net.IPNet) (netip.Prefix, bool) {
	ip, ok := netip.AddrFromSlice(ipn.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := ipn.Mask.Size()
	p := netip.PrefixFrom(ip.Unmap(), ones)
	return p, p.IsValid()
}

// usableAddr reports whether an address with these IFA_F_* flags can be
// used: one that failed duplicate address detection cannot. A tentative one
// is kept: it becomes usable within seconds, and the NDP responder retries.
func usableAddr(flags int) bool {
	return flags&unix.IFA_F_DADFAILED == 0
}

// isDefaultRoute reports whether r is a main-table default route.
func isDefaultRoute(r netlink.Route) bool {
	if r.Table != 0 && r.Table != unix.RT_TABLE_MAIN {
		return false
	}
	if r.Dst == nil {
		return true
	}
	ones, _ := r.Dst.Mask.Size()
	return ones == 0
}

// routeLinks returns the link indexes a route leaves through.
func routeLinks(r netlink.Route) []int {
	if len(r.MultiPath) == 0 {
		return []int{r.LinkIndex}
	}
	out := make([]int, 0, len(r.MultiPath))
	for _, nh := range r.MultiPath {
		out = append(out, nh.LinkIndex)
	}
	return out
}
