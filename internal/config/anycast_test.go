package config

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/herald-lb/herald/api/v1beta1"
)

// TestIPv6CIDRsReserveTheirSubnetRouterAnycast: each IPv6 CIDR entry
// names its all-zeros address as reserved; ranges written first-last,
// IPv4, /127 and /128 reserve nothing. The sharing field is carried.
func TestIPv6CIDRsReserveTheirSubnetRouterAnycast(t *testing.T) {
	p := poolObj("p", 0, "2001:db8:ff00::/40", "198.51.100.0/24", "2001:db8:1::1-2001:db8:1::ff", "2001:db8:2::/127", "2001:db8:3::/128", "2001:db8:4::/126")
	p.Spec.Sharing = &v1beta1.PoolSharing{AcrossNamespaces: []string{"b", "a"}}
	cfg, problems := Build(Input{Pools: []*v1beta1.IPAddressPool{p}})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	got := cfg.Pools["p"]
	want := []netip.Addr{mustAddr("2001:db8:4::"), mustAddr("2001:db8:ff00::")}
	if !reflect.DeepEqual(got.SubnetRouterAnycast, want) {
		t.Errorf("reserved %v, want %v", got.SubnetRouterAnycast, want)
	}
	if !got.Contains(mustAddr("2001:db8:ff00::")) {
		t.Error("the reserved address left the pool: a Service may still request it")
	}
	if !reflect.DeepEqual(got.ShareAcrossNamespaces, []string{"a", "b"}) {
		t.Errorf("sharing %v", got.ShareAcrossNamespaces)
	}
}
