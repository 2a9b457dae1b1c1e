package k8s

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	heraldlisters "github.com/herald-lb/herald/api/generated/listers/api/v1beta1"
	"github.com/herald-lb/herald/internal/config"
)

// DropManagedFields is an informer transform (cache.TransformFunc) that
// drops managedFields, which neither binary reads and which cost memory on
// every cached object.
func DropManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// ConfigListers read, from informer caches, what internal/config builds
// the configuration from: every Herald kind, and the Secrets of Herald's
// namespace.
type ConfigListers struct {
	Pools       heraldlisters.IPAddressPoolLister
	L2Adverts   heraldlisters.L2AdvertisementLister
	BGPAdverts  heraldlisters.BGPAdvertisementLister
	Peers       heraldlisters.BGPPeerLister
	Communities heraldlisters.CommunityLister
	BFDProfiles heraldlisters.BFDProfileLister
	Secrets     corelisters.SecretNamespaceLister
}

// Input lists everything config.Build takes.
func (l ConfigListers) Input() (config.Input, error) {
	var in config.Input
	var err error
	all := labels.Everything()
	if in.Pools, err = l.Pools.List(all); err != nil {
		return in, err
	}
	if in.L2Advertisements, err = l.L2Adverts.List(all); err != nil {
		return in, err
	}
	if in.BGPAdvertisements, err = l.BGPAdverts.List(all); err != nil {
		return in, err
	}
	if in.Peers, err = l.Peers.List(all); err != nil {
		return in, err
	}
	if in.Communities, err = l.Communities.List(all); err != nil {
		return in, err
	}
	if in.BFDProfiles, err = l.BFDProfiles.List(all); err != nil {
		return in, err
	}
	in.Secrets, err = l.Secrets.List(all)
	return in, err
}

// slicesByService indexes EndpointSlices by "namespace/service".
const slicesByService = "service"

// IndexSlicesByService adds to an EndpointSlice informer the index that
// SlicesOf reads.
func IndexSlicesByService(inf cache.SharedIndexInformer) error {
	return inf.AddIndexers(cache.Indexers{slicesByService: func(obj any) ([]string, error) {
		es, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok {
			return nil, fmt.Errorf("not an EndpointSlice: %T", obj)
		}
		if name := es.Labels[discoveryv1.LabelServiceName]; name != "" {
			return []string{es.Namespace + "/" + name}, nil
		}
		return nil, nil
	}})
}

// SlicesOf returns the EndpointSlices of svc from the indexer of an
// informer set up with IndexSlicesByService.
func SlicesOf(idx cache.Indexer, svc *corev1.Service) []*discoveryv1.EndpointSlice {
	objs, _ := idx.ByIndex(slicesByService, svc.Namespace+"/"+svc.Name)
	out := make([]*discoveryv1.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*discoveryv1.EndpointSlice))
	}
	return out
}
