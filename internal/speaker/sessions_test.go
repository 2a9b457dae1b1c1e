package speaker

import (
	"net/netip"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/bgp"
	"github.com/herald-lb/herald/internal/config"
)

func TestSessionProblem(t *testing.T) {
	cases := []struct {
		st   bgp.SessionState
		want string
	}{
		{bgp.SessionState{State: "Established"}, ""},
		{bgp.SessionState{State: "NotConfigured", Error: "cannot listen", Refused: "bad AS"}, "cannot listen"},
		{bgp.SessionState{State: "Active", Refused: "the router's AS 64513 is myASN", LastError: "i/o timeout"}, "the router's AS 64513 is myASN"},
		{bgp.SessionState{State: "Active", LastError: "i/o timeout"}, "not established: i/o timeout"},
		{bgp.SessionState{State: "Established", LastError: "old", Warnings: []string{"a", "b"}}, "a; b"},
	}
	for _, c := range cases {
		if got := sessionProblem(c.st); got != c.want {
			t.Errorf("%+v: %q, want %q", c.st, got, c.want)
		}
	}
}

func TestASNClass(t *testing.T) {
	for in, want := range map[config.DynamicASN]bgp.ASNClass{"": bgp.FixedASN, config.DynamicInternal: bgp.AnyInternal, config.DynamicExternal: bgp.AnyExternal} {
		if got := asnClass(in); got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
	}
}

// TestSessionFamilies: a session carries the pools' families unless its
// BGPPeer names its own, which then hold whatever the pools hold.
func TestSessionFamilies(t *testing.T) {
	pool := func(addrs ...string) *v1beta1.IPAddressPool {
		return &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1beta1.IPAddressPoolSpec{Addresses: addrs}}
	}
	peers := []*config.Peer{
		{Name: "pools", Address: netip.MustParseAddr("198.51.100.1")},
		{Name: "v4", Address: netip.MustParseAddr("2001:db8:1::1"), AddressFamilies: []string{"IPv4"}},
		{Name: "v6", Address: netip.MustParseAddr("198.51.100.3"), AddressFamilies: []string{"IPv6"}},
		{Name: "both", Address: netip.MustParseAddr("198.51.100.4"), AddressFamilies: []string{"IPv4", "IPv6"}},
	}
	type want struct {
		fams   []bgp.Family
		chosen bool
	}
	dual, v4only := []bgp.Family{bgp.IPv4Unicast, bgp.IPv6Unicast}, []bgp.Family{bgp.IPv4Unicast}
	for name, c := range map[string]struct {
		pool *v1beta1.IPAddressPool
		want map[string]want
	}{
		"dual-stack pools": {pool("198.51.100.128/27", "2001:db8:ff::/120"), map[string]want{
			"pools": {dual, false}, "v4": {v4only, true}, "v6": {[]bgp.Family{bgp.IPv6Unicast}, true}, "both": {dual, true},
		}},
		"IPv4 pools": {pool("198.51.100.128/27"), map[string]want{
			"pools": {v4only, false}, "v4": {v4only, true}, "v6": {[]bgp.Family{bgp.IPv6Unicast}, true}, "both": {dual, true},
		}},
	} {
		cfg, _ := config.Build(config.Input{Pools: []*v1beta1.IPAddressPool{c.pool}})
		d := desiredBGP(announce.BGPResult{Peers: peers}, cfg, netip.MustParseAddr("198.51.100.11"), netip.MustParseAddr("2001:db8:1::11"))
		for _, s := range d.Sessions {
			w := c.want[s.Name]
			if !slices.Equal(s.Families, w.fams) || s.FamiliesChosen != w.chosen {
				t.Errorf("%s, %s: families %v chosen %v, want %v %v", name, s.Name, s.Families, s.FamiliesChosen, w.fams, w.chosen)
			}
		}
	}
}
