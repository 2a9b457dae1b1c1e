package announce

import (
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Endpoints summarises a Service's EndpointSlices for announcing.
type Endpoints struct {
	// Local holds the nodes with a ready, or serving and terminating,
	// endpoint: the nodes that may announce an externalTrafficPolicy: Local
	// Service.
	Local map[string]bool
	// AnyReady is true when some endpoint is ready (or serving and
	// terminating): a Cluster-policy Service is then worth advertising.
	AnyReady bool
	// LocalReady counts the usable endpoints (as for Local) on each node:
	// the weight of the node's routes when an advertisement asks for
	// link bandwidth. A pod listed in the slices of both address
	// families counts once (the larger family's count).
	LocalReady map[string]int
}

// SummarizeEndpoints reads the EndpointSlices of one Service.
func SummarizeEndpoints(slices []*discoveryv1.EndpointSlice) Endpoints {
	e := Endpoints{Local: map[string]bool{}, LocalReady: map[string]int{}}
	byFamily := map[discoveryv1.AddressType]map[string]int{}
	for _, s := range slices {
		for _, ep := range s.Endpoints {
			if !usable(ep.Conditions) {
				continue
			}
			e.AnyReady = true
			if ep.NodeName != nil && *ep.NodeName != "" {
				e.Local[*ep.NodeName] = true
				if byFamily[s.AddressType] == nil {
					byFamily[s.AddressType] = map[string]int{}
				}
				byFamily[s.AddressType][*ep.NodeName]++
			}
		}
	}
	for _, counts := range byFamily {
		for n, c := range counts {
			e.LocalReady[n] = max(e.LocalReady[n], c)
		}
	}
	return e
}

// usable: ready (nil means ready), or serving while terminating, which
// kube-proxy also sends traffic to when nothing else is ready.
func usable(c discoveryv1.EndpointConditions) bool {
	if c.Ready == nil || *c.Ready {
		return true
	}
	return c.Serving != nil && *c.Serving && c.Terminating != nil && *c.Terminating
}
