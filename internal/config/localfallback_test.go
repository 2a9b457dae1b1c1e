package config

import (
	"strings"
	"testing"

	"github.com/herald-lb/herald/api/v1beta1"
)

// TestPoolLocalFallback: unset means SomePorts, the two values are
// carried, anything else is a problem of the pool.
func TestPoolLocalFallback(t *testing.T) {
	for _, c := range []struct {
		sharing *v1beta1.PoolSharing
		want    string
		problem string
	}{
		{nil, v1beta1.LocalFallbackSomePorts, ""},
		{&v1beta1.PoolSharing{AcrossNamespaces: []string{"a"}}, v1beta1.LocalFallbackSomePorts, ""},
		{&v1beta1.PoolSharing{LocalFallback: v1beta1.LocalFallbackNone}, v1beta1.LocalFallbackNone, ""},
		{&v1beta1.PoolSharing{LocalFallback: v1beta1.LocalFallbackSomePorts}, v1beta1.LocalFallbackSomePorts, ""},
		{&v1beta1.PoolSharing{LocalFallback: "Some"}, "", "spec.sharing.localFallback"},
	} {
		p := poolObj("p", 0, "198.51.100.0/28")
		p.Spec.Sharing = c.sharing
		cfg, problems := Build(Input{Pools: []*v1beta1.IPAddressPool{p}})
		if c.problem != "" {
			if len(problems) != 1 || !strings.Contains(problems[0].Field, c.problem) {
				t.Errorf("%+v: problems %v, want one on %s", c.sharing, problems, c.problem)
			}
			continue
		}
		if len(problems) > 0 || cfg.Pools["p"].LocalFallback != c.want {
			t.Errorf("%+v: %v, problems %v; want %s", c.sharing, cfg.Pools["p"], problems, c.want)
		}
	}
}
