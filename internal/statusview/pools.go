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
// (the speakers decide the same way). An address no pool contains any
// more shows the pool Herald recorded, marked; without the pools, the
// record is all there is.
func poolColumn(ips []netip.Addr, recorded string, pools *config.Config) string {
	if pools == nil {
		return recorded
	}
	var names []string
	for _, ip := range ips {
		name := "-"
		if p, ok := pools.PoolFor(ip); ok {
			name = p.Name
		} else if recorded != "" {
			name = recorded + " (outside its ranges)"
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
