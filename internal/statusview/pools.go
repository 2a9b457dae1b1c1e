package statusview

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/config"
)

// poolConfig builds the valid pools from the inputs, nil when they could
// not be read.
func poolConfig(in Inputs) *config.Config {
	if !in.PoolsRead {
		return nil
	}
	objs := make([]*v1beta1.IPAddressPool, len(in.Pools))
	for i := range in.Pools {
		objs[i] = &in.Pools[i]
	}
	cfg, _ := config.Build(config.Input{Pools: objs}) // invalid pools are left out, as the speakers leave them
	return cfg
}

// poolColumn names the pool of each address as the configuration says
// (the speakers decide the same way): the pool whose ranges contain it,
// else the pool whose status records it as held outside its ranges,
// marked. The annotation (recorded), which the Service's owner can edit,
// counts only for an address in neither and only while the pool it names
// has no record at all (an upgrade), marked so. Without the pools, the
// annotation is all there is.
func poolColumn(ips []netip.Addr, recorded string, pools *config.Config) string {
	if pools == nil {
		return recorded
	}
	var names []string
	for _, ip := range ips {
		name := "-"
		if p, fallback := pools.PoolOfRecord(ip, recorded); p != nil {
			switch {
			case fallback:
				name = p.Name + " (outside its ranges, as annotated: the pool has no record yet)"
			case !p.Contains(ip):
				name = p.Name + " (outside its ranges)"
			default:
				name = p.Name
			}
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return strings.Join(names, ",")
}
