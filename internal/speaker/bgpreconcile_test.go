package speaker

import (
	"net/netip"
	"testing"
)

// TestBGPWhole: the backend gets the changed prefixes alone only when
// nothing holds the speaker, the memo changed only some Services, and
// the last hand-over took with the same node addresses and VRFs; every other
// combination is a change of everything.
func TestBGPWhole(t *testing.T) {
	v4, v6 := netip.MustParseAddr("198.51.100.11"), netip.MustParseAddr("2001:db8::11")
	now := bgpApplied{ok: true, v4: v4, v6: v6}
	lasts := map[string]bgpApplied{
		"took with these addresses":  now,
		"none yet, refused or held":  {},
		"took with another address":  {ok: true, v4: netip.MustParseAddr("198.51.100.12"), v6: v6},
		"refused with these address": {v4: v4, v6: v6},
		"took with other VRFs":       {ok: true, v4: v4, v6: v6, vrfs: "blue"},
	}
	for name, last := range lasts {
		for _, held := range []bool{false, true} {
			for _, memoAll := range []bool{false, true} {
				incremental := name == "took with these addresses" && !held && !memoAll
				want := !incremental
				if got := bgpWhole(held, memoAll, last, now); got != want {
					t.Errorf("last %s, held %v, memo all %v: whole %v, want %v", name, held, memoAll, got, want)
				}
			}
		}
	}
}
