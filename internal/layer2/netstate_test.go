package layer2

import (
	"net"
	"net/netip"
	"reflect"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

func linkUpdate(typ uint16, index int, name string, flags net.Flags, master int) netlink.LinkUpdate {
	mac, _ := net.ParseMAC("02:00:00:00:00:11")
	u := netlink.LinkUpdate{Link: &netlink.Veth{LinkAttrs: netlink.LinkAttrs{
		Index: index, Name: name, Flags: flags, MasterIndex: master, HardwareAddr: mac}}}
	u.Header.Type = typ
	return u
}

func addrUpdate(index int, cidr string, add bool, flags int) netlink.AddrUpdate {
	ip, ipn, _ := net.ParseCIDR(cidr)
	ipn.IP = ip // a 16-byte form for IPv4, as netlink may give it
	return netlink.AddrUpdate{LinkAddress: *ipn, LinkIndex: index, NewAddr: add, Flags: flags}
}

func TestLinkTableApply(t *testing.T) {
	up := net.FlagUp | net.FlagRunning
	tab := newLinkTable()
	tab.apply(linkUpdate(unix.RTM_NEWLINK, 2, "eth0", up, 0))
	tab.apply(linkUpdate(unix.RTM_NEWLINK, 3, "eth1", net.FlagUp, 0)) // no carrier
	tab.apply(linkUpdate(unix.RTM_NEWLINK, 4, "eth2", up, 9))
	tab.apply(addrUpdate(2, "198.51.100.11/25", true, 0))
	tab.apply(addrUpdate(2, "fe80::11/64", true, unix.IFA_F_TENTATIVE))
	tab.apply(addrUpdate(2, "2001:db8:1::11/64", true, 0))
	tab.apply(addrUpdate(2, "2001:db8:1::11/64", true, unix.IFA_F_DADFAILED))
	tab.apply(addrUpdate(3, "10.0.0.1/24", true, 0))
	tab.apply(addrUpdate(3, "10.0.0.1/24", false, 0))
	if !tab.refreshRoutes {
		t.Error("new links should ask for a default route refresh")
	}
	tab.refreshRoutes = false
	tab.apply(netlink.RouteUpdate{Route: netlink.Route{Table: unix.RT_TABLE_MAIN, LinkIndex: 2}})
	if !tab.refreshRoutes {
		t.Error("a default route update should ask for a refresh")
	}
	tab.refreshRoutes = false
	_, dst, _ := net.ParseCIDR("198.51.100.0/25")
	tab.apply(netlink.RouteUpdate{Route: netlink.Route{Table: unix.RT_TABLE_MAIN, Dst: dst, LinkIndex: 2}})
	if tab.refreshRoutes {
		t.Error("a subnet route should not ask for a refresh")
	}

	s := tab.snapshot()
	want := []Link{
		{Name: "eth0", Index: 2, Up: true, Addrs: []netip.Prefix{netip.MustParsePrefix("198.51.100.11/25"), netip.MustParsePrefix("fe80::11/64")}},
		{Name: "eth1", Index: 3},
		{Name: "eth2", Index: 4, Up: true, MasterIndex: 9},
	}
	if !reflect.DeepEqual(s.links, want) {
		t.Fatalf("links:\n got %+v\nwant %+v", s.links, want)
	}
	gen := s.ident["eth0"].gen
	tab.apply(linkUpdate(unix.RTM_NEWLINK, 2, "eth0", net.FlagUp, 0))
	tab.apply(linkUpdate(unix.RTM_NEWLINK, 2, "eth0", up, 0))
	if tab.snapshot().ident["eth0"].gen == gen {
		t.Error("a link that went down and up kept its generation")
	}
	tab.apply(linkUpdate(unix.RTM_DELLINK, 2, "eth0", 0, 0))
	if _, ok := tab.snapshot().ident["eth0"]; ok || tab.addrs[2] != nil {
		t.Error("deleted link still known")
	}
}
