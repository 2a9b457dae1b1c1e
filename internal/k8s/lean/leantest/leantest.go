// Package leantest builds the speaker's lean.API over client-go's full
// clientsets, fake or real, for tests.
package leantest

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/watchlist"

	"github.com/herald-lb/herald/api/generated/clientset/versioned"
	"github.com/herald-lb/herald/internal/k8s/clientset"
	"github.com/herald-lb/herald/internal/k8s/lean"
)

// FromClientsets returns the speaker's API over kube and herald, with
// Herald's namespace ns.
func FromClientsets(kube kubernetes.Interface, herald versioned.Interface, ns string) *lean.API {
	scheme, err := lean.NewScheme()
	if err != nil {
		panic(err) // a static scheme: cannot fail at run time
	}
	return &lean.API{
		Services:          kube.CoreV1().Services(""),
		EndpointSlices:    kube.DiscoveryV1().EndpointSlices(""),
		Nodes:             kube.CoreV1().Nodes(),
		Secrets:           kube.CoreV1().Secrets(ns),
		Leases:            kube.CoordinationV1().Leases(ns),
		Pools:             herald.HeraldV1beta1().IPAddressPools(),
		L2Advertisements:  herald.HeraldV1beta1().L2Advertisements(),
		BGPAdvertisements: herald.HeraldV1beta1().BGPAdvertisements(),
		BGPPeers:          herald.HeraldV1beta1().BGPPeers(),
		Communities:       herald.HeraldV1beta1().Communities(),
		BFDProfiles:       herald.HeraldV1beta1().BFDProfiles(),
		SpeakerStatuses:   herald.HeraldV1beta1().SpeakerStatuses(),
		Events:            clientset.EventSink(kube),
		Scheme:            scheme,
		NoWatchList: watchlist.DoesClientNotSupportWatchListSemantics(kube) ||
			watchlist.DoesClientNotSupportWatchListSemantics(herald),
	}
}
