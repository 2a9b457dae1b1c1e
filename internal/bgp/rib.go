package bgp

import (
	"fmt"
	"net/netip"

	"github.com/osrg/gobgp/v4/pkg/apiutil"
	bgppkt "github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// ribPath builds the path GoBGP keeps in its RIB for one prefix: origin IGP
// and the next hop. Communities, large communities and LOCAL_PREF are added
// per peer by the export policy, never here.
func ribPath(prefix netip.Prefix, nextHop netip.Addr, withdraw bool) (*apiutil.Path, error) {
	nlri, err := bgppkt.NewIPAddrPrefix(prefix)
	if err != nil {
		return nil, fmt.Errorf("path %s: %w", prefix, err)
	}
	origin := bgppkt.NewPathAttributeOrigin(bgppkt.BGP_ORIGIN_ATTR_TYPE_IGP)
	if prefix.Addr().Is4() {
		nh, err := bgppkt.NewPathAttributeNextHop(nextHop)
		if err != nil {
			return nil, fmt.Errorf("path %s: next hop %s: %w", prefix, nextHop, err)
		}
		return &apiutil.Path{Family: bgppkt.RF_IPv4_UC, Nlri: nlri, Withdrawal: withdraw,
			Attrs: []bgppkt.PathAttributeInterface{origin, nh}}, nil
	}
	mp, err := bgppkt.NewPathAttributeMpReachNLRI(bgppkt.RF_IPv6_UC, []bgppkt.PathNLRI{{NLRI: nlri}}, nextHop)
	if err != nil {
		return nil, fmt.Errorf("path %s: next hop %s: %w", prefix, nextHop, err)
	}
	return &apiutil.Path{Family: bgppkt.RF_IPv6_UC, Nlri: nlri, Withdrawal: withdraw,
		Attrs: []bgppkt.PathAttributeInterface{origin, mp}}, nil
}
