package announce

import (
	"net/netip"
	"reflect"
	"testing"
)

// TestChangesMerge: All absorbs; otherwise both sets' addresses and
// Services, sorted, each once.
func TestChangesMerge(t *testing.T) {
	a, b, c := netip.MustParseAddr("198.51.100.64"), netip.MustParseAddr("198.51.100.65"), netip.MustParseAddr("2001:db8::1")
	some := Changes{IPs: []netip.Addr{b}, Keys: []string{"ns/b"}}
	for _, tc := range []struct {
		name       string
		first, and Changes
		want       Changes
	}{
		{"nothing", Changes{}, Changes{}, Changes{}},
		{"nothing then some", Changes{}, some, some},
		{"some then nothing", some, Changes{}, some},
		{"all then some", Changes{All: true}, some, Changes{All: true}},
		{"some then all", some, Changes{All: true}, Changes{All: true}},
		{"union", Changes{IPs: []netip.Addr{c, a}, Keys: []string{"ns/c", "ns/a"}}, Changes{IPs: []netip.Addr{b, a}, Keys: []string{"ns/b", "ns/a"}},
			Changes{IPs: []netip.Addr{a, b, c}, Keys: []string{"ns/a", "ns/b", "ns/c"}}},
	} {
		if got := tc.first.Merge(tc.and); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
