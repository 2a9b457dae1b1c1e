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
}

// SummarizeEndpoints reads the EndpointSlices of one Service.
func SummarizeEndpoints(slices []*discoveryv1.EndpointSlice) Endpoints {
	e := Endpoints{Local: map[string]bool{}}
	for _, s := range slices {
		for _, ep := range s.Endpoints {
			if !usable(ep.Conditions) {
				continue
			}
			e.AnyReady = true
			if ep.NodeName != nil && *ep.NodeName != "" {
				e.Local[*ep.NodeName] = true
			}
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
