package layer2

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
)

// link builds a Link that is up and stands alone, with the given addresses.
func link(index int, name string, addrs ...string) Link {
	l := Link{Name: name, Index: index, Up: true}
	for _, a := range addrs {
		l.Addrs = append(l.Addrs, netip.MustParsePrefix(a))
	}
	return l
}

func down(l Link) Link { l.Up = false; return l }

func enslaved(l Link, master int) Link { l.MasterIndex = master; return l }

const ll = "fe80::1/64" // a link-local address, needed to answer NDP

func TestChooseInterfaces(t *testing.T) {
	eth0 := link(2, "eth0", "198.51.100.11/25", "2001:db8:1::11/64", ll)
	eth1 := link(3, "eth1", "198.51.100.130/26", "2001:db8:2::11/64", ll)
	bond0 := link(4, "bond0", "198.51.100.200/29", "2001:db8:3::1/64", ll)
	eth2 := enslaved(link(5, "eth2", "198.51.100.201/29", ll), 4)
	veth := link(6, "veth1234", "198.51.100.11/25", ll)
	cali := link(7, "cali9f", "198.51.100.11/25", ll)
	lo := link(1, "lo", "127.0.0.1/8", "::1/128")
	defaults := DefaultRoutes{V4: []int{2}, V6: []int{2}}
	none := DefaultRoutes{}
	def := DefaultExcludeInterfaces()

	tests := []struct {
		name     string
		links    []Link
		defaults DefaultRoutes
		vip      string
		override []string
		exclude  []string
		want     []string
		missing  []string
	}{
		{"v4 subnet", []Link{lo, eth0, eth1}, defaults, "198.51.100.70", nil, def, []string{"eth0"}, nil},
		{"v4 subnet on second link", []Link{lo, eth0, eth1}, defaults, "198.51.100.150", nil, def, []string{"eth1"}, nil},
		{"v4 subnet on two links, sorted", []Link{link(9, "zz", "198.51.100.1/24"), eth0}, none, "198.51.100.70", nil, def, []string{"eth0", "zz"}, nil},
		{"v4 no subnet: default route", []Link{lo, eth0, eth1}, defaults, "198.51.100.250", nil, def, []string{"eth0"}, nil},
		{"v4 no subnet, no default route", []Link{lo, eth0, eth1}, none, "198.51.100.250", nil, def, nil, nil},
		{"v4 default route family only", []Link{eth0, eth1}, DefaultRoutes{V6: []int{2}}, "198.51.100.250", nil, def, nil, nil},
		{"v4 ECMP default route", []Link{eth0, eth1}, DefaultRoutes{V4: []int{3, 2}}, "198.51.100.250", nil, def, []string{"eth0", "eth1"}, nil},
		{"v4 default route on unknown index", []Link{eth0}, DefaultRoutes{V4: []int{42}}, "198.51.100.250", nil, def, nil, nil},
		{"v4 link without IPv4 cannot answer", []Link{link(2, "eth0", "2001:db8:1::11/64", ll)}, defaults, "198.51.100.70", nil, def, nil, nil},
		{"v4 host route is not a subnet", []Link{link(2, "eth0", "198.51.100.70/32"), link(3, "eth1", "10.0.0.1/8")}, DefaultRoutes{V4: []int{3}}, "198.51.100.70", nil, def, []string{"eth1"}, nil},
		{"v4 mapped VIP", []Link{eth0}, none, "::ffff:198.51.100.70", nil, def, []string{"eth0"}, nil},
		{"v6 subnet", []Link{lo, eth0, eth1}, defaults, "2001:db8:1::70", nil, def, []string{"eth0"}, nil},
		{"v6 subnet on second link", []Link{lo, eth0, eth1}, defaults, "2001:db8:2::70", nil, def, []string{"eth1"}, nil},
		{"v6 no subnet: default route", []Link{lo, eth0, eth1}, defaults, "2001:db8:ff::10", nil, def, []string{"eth0"}, nil},
		{"v6 needs a link-local", []Link{link(2, "eth0", "2001:db8:1::11/64"), link(3, "eth1", ll)}, DefaultRoutes{V6: []int{3}}, "2001:db8:1::70", nil, def, []string{"eth1"}, nil},
		{"v6 host route is not a subnet", []Link{link(2, "eth0", "2001:db8:1::70/128", ll)}, none, "2001:db8:1::70", nil, def, nil, nil},
		{"down link skipped, default route used", []Link{down(eth1), eth0}, defaults, "198.51.100.150", nil, def, []string{"eth0"}, nil},
		{"down default route link", []Link{down(eth0)}, defaults, "198.51.100.250", nil, def, nil, nil},
		{"bridge member never, bond itself yes", []Link{bond0, eth2}, none, "198.51.100.202", nil, def, []string{"bond0"}, nil},
		{"bridge member alone", []Link{eth2}, DefaultRoutes{V4: []int{5}}, "198.51.100.202", nil, def, nil, nil},
		{"lo never", []Link{lo}, DefaultRoutes{V4: []int{1}, V6: []int{1}}, "127.0.0.5", nil, nil, nil, nil},
		{"excluded names skipped", []Link{veth, cali, eth0}, none, "198.51.100.70", nil, def, []string{"eth0"}, nil},
		{"excluded names only", []Link{veth, cali}, none, "198.51.100.70", nil, def, nil, nil},
		{"excluded default route link", []Link{veth}, DefaultRoutes{V4: []int{6}}, "198.51.100.250", nil, def, nil, nil},
		{"empty exclude list allows veth", []Link{veth}, none, "198.51.100.70", nil, []string{}, []string{"veth1234"}, nil},
		{"custom pattern", []Link{eth0, eth1}, none, "198.51.100.70", nil, []string{"eth0"}, nil, nil},
		{"override", []Link{eth0, eth1}, defaults, "198.51.100.70", []string{"eth1"}, def, []string{"eth1"}, nil},
		{"override, several, deduplicated", []Link{eth0, eth1}, none, "198.51.100.70", []string{"eth1", "eth0", "eth1"}, def, []string{"eth0", "eth1"}, nil},
		{"override may name an excluded pattern", []Link{veth}, none, "198.51.100.70", []string{"veth1234"}, def, []string{"veth1234"}, nil},
		{"override missing interface, no fallback", []Link{eth0}, defaults, "198.51.100.70", []string{"eth9"}, def, nil, []string{"eth9"}},
		{"override partly missing", []Link{eth0}, defaults, "198.51.100.70", []string{"eth9", "eth0", "eth8"}, def, []string{"eth0"}, []string{"eth8", "eth9"}},
		{"override down link", []Link{down(eth1)}, defaults, "198.51.100.70", []string{"eth1"}, def, nil, nil},
		{"override bridge member", []Link{bond0, eth2}, none, "198.51.100.70", []string{"eth2"}, def, nil, nil},
		{"override lo", []Link{lo}, none, "127.0.0.5", []string{"lo"}, []string{}, nil, nil},
		{"override v6 without link-local", []Link{link(2, "eth0", "2001:db8:1::11/64")}, none, "2001:db8:1::70", []string{"eth0"}, def, nil, nil},
		{"override v4 without IPv4", []Link{link(2, "eth0", ll)}, none, "198.51.100.70", []string{"eth0"}, def, nil, nil},
		{"invalid VIP", []Link{eth0}, defaults, "", nil, def, nil, nil},
		{"no links", nil, defaults, "198.51.100.70", nil, def, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var vip netip.Addr
			if tc.vip != "" {
				vip = netip.MustParseAddr(tc.vip)
			}
			got := ChooseInterfaces(tc.links, tc.defaults, vip, tc.override, tc.exclude)
			if !slices.Equal(got.Interfaces, tc.want) || !slices.Equal(got.MissingOverrides, tc.missing) {
				t.Errorf("got %v missing %v, want %v missing %v", got.Interfaces, got.MissingOverrides, tc.want, tc.missing)
			}
		})
	}
}

// TestChooseInterfacesExhaustive enumerates every combination of the
// properties that matter for two links and checks the rules that always
// hold, with and without an override.
func TestChooseInterfacesExhaustive(t *testing.T) {
	names := []string{"lo", "eth0", "veth0", "br0"}
	addrSets := [][]string{nil, {"198.51.100.11/25"}, {"198.51.100.11/32"}, {"10.1.1.1/24"}, {ll}, {"2001:db8:1::11/64", ll}, {"2001:db8:1::11/64"}}
	vips := []netip.Addr{netip.MustParseAddr("198.51.100.70"), netip.MustParseAddr("2001:db8:1::70")}
	var links []Link
	for _, name := range names {
		for _, addrs := range addrSets {
			for _, up := range []bool{false, true} {
				for _, master := range []int{0, 9} {
					l := link(len(links)+1, name, addrs...)
					l.Up, l.MasterIndex = up, master
					links = append(links, l)
				}
			}
		}
	}
	n := 0
	for _, a := range links {
		for _, b := range links {
			if a.Name == b.Name {
				continue
			}
			pair := []Link{a, b}
			for _, vip := range vips {
				for _, dflt := range []DefaultRoutes{{}, {V4: []int{a.Index}, V6: []int{a.Index}}} {
					for _, override := range [][]string{nil, {a.Name}, {a.Name, "missing"}} {
						n++
						checkChoice(t, pair, dflt, vip, override)
					}
				}
			}
		}
	}
	t.Logf("checked %d combinations", n)
}

func checkChoice(t *testing.T, links []Link, dflt DefaultRoutes, vip netip.Addr, override []string) {
	t.Helper()
	exclude := DefaultExcludeInterfaces()
	c := ChooseInterfaces(links, dflt, vip, override, exclude)
	desc := fmt.Sprintf("links %+v default %+v vip %s override %v -> %+v", links, dflt, vip, override, c)
	if !slices.IsSorted(c.Interfaces) || len(slices.Compact(slices.Clone(c.Interfaces))) != len(c.Interfaces) {
		t.Fatalf("not sorted and unique: %s", desc)
	}
	for _, name := range c.Interfaces {
		l := links[slices.IndexFunc(links, func(l Link) bool { return l.Name == name })]
		switch {
		case l.Name == "lo", !l.Up, l.MasterIndex != 0:
			t.Fatalf("chose %s: %s", name, desc)
		case !usable(l, vip):
			t.Fatalf("chose %s which cannot answer for the family: %s", name, desc)
		case len(override) > 0 && !slices.Contains(override, name):
			t.Fatalf("chose %s outside the override: %s", name, desc)
		case len(override) == 0 && excluded(name, exclude):
			t.Fatalf("chose excluded %s: %s", name, desc)
		}
	}
	if slices.Contains(override, "missing") != slices.Contains(c.MissingOverrides, "missing") {
		t.Fatalf("missing override not reported: %s", desc)
	}
}

func TestDefaultExcludeInterfacesArePatterns(t *testing.T) {
	cases := map[string]bool{
		"lo": true, "kube-ipvs0": true, "docker0": true, "cni0": true, "flannel.1": true,
		"cali12ab": true, "cilium_host": true, "lxc9": true, "vxlan.calico": true, "tunl0": true,
		"nodelocaldns": true, "veth0abc": true,
		"eth0": false, "ens3": false, "bond0": false, "br-ex": false, "enp1s0f0": false, "vlan100": false,
	}
	for name, want := range cases {
		if got := excluded(name, DefaultExcludeInterfaces()); got != want {
			t.Errorf("excluded(%q) = %v, want %v", name, got, want)
		}
	}
}
