package config

import (
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/api/v1beta1"
)

// Input is everything Build reads: the listed custom resources and the
// Secrets of Herald's own namespace.
type Input struct {
	Pools             []*v1beta1.IPAddressPool
	L2Advertisements  []*v1beta1.L2Advertisement
	BGPAdvertisements []*v1beta1.BGPAdvertisement
	Peers             []*v1beta1.BGPPeer
	Communities       []*v1beta1.Community
	BFDProfiles       []*v1beta1.BFDProfile
	Secrets           []*corev1.Secret
}

// Build validates the input and returns the configuration snapshot and the
// problems found, sorted by kind, name and field.
func Build(in Input) (*Config, []Problem) {
	var ps problems
	cfg := &Config{
		Pools:       buildPools(in.Pools, &ps),
		BFDProfiles: buildBFDProfiles(in.BFDProfiles),
	}
	cfg.L2Advertisements = buildL2Advertisements(in.L2Advertisements, cfg, &ps)
	cfg.Peers = buildPeers(in.Peers, in.Secrets, cfg, &ps)
	aliases := buildAliases(in.Communities, &ps)
	cfg.BGPAdvertisements = buildBGPAdvertisements(in.BGPAdvertisements, aliases, cfg, &ps)
	return cfg, ps.sorted()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
