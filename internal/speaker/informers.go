package speaker

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/herald-lb/herald/api/generated/clientset/versioned"
	heraldinformers "github.com/herald-lb/herald/api/generated/informers/externalversions"
)

// byService indexes EndpointSlices by "namespace/service".
const byService = "service"

// objectBatch is how long object changes wait to be reconciled together.
const objectBatch = 30 * time.Millisecond

func (s *Speaker) setupInformers(kube kubernetes.Interface, herald versioned.Interface) error {
	// Managed fields are of no use here and cost memory on every object.
	strip := informers.WithTransform(func(obj any) (any, error) {
		if m, err := meta.Accessor(obj); err == nil {
			m.SetManagedFields(nil)
		}
		return obj, nil
	})
	s.kubeInformers = informers.NewSharedInformerFactoryWithOptions(kube, 0, strip)
	s.secretInformers = informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(s.opts.Namespace), strip)
	s.heraldInformers = heraldinformers.NewSharedInformerFactory(herald, 0)

	svcInf := s.kubeInformers.Core().V1().Services()
	sliceInf := s.kubeInformers.Discovery().V1().EndpointSlices()
	nodeInf := s.kubeInformers.Core().V1().Nodes()
	secretInf := s.secretInformers.Core().V1().Secrets()
	h := s.heraldInformers.Herald().V1beta1()
	if err := sliceInf.Informer().AddIndexers(cache.Indexers{byService: sliceServiceKey}); err != nil {
		return err
	}
	s.services, s.slices, s.nodes, s.secrets = svcInf.Lister(), sliceInf.Lister(), nodeInf.Lister(), secretInf.Lister()
	s.sliceIndex = sliceInf.Informer().GetIndexer()
	s.listers = heraldListers{
		pools: h.IPAddressPools().Lister(), l2Adverts: h.L2Advertisements().Lister(),
		bgpAdverts: h.BGPAdvertisements().Lister(), peers: h.BGPPeers().Lister(),
		communities: h.Communities().Lister(), bfdProfiles: h.BFDProfiles().Lister(),
	}
	// Object changes are batched for a few milliseconds: a burst of
	// Services, EndpointSlices and status writes costs one reconcile, not
	// one each. Member changes and hand-over confirmations (Trigger) are not
	// delayed.
	trigger := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.queue.AddAfter(reconcileKey, objectBatch) },
		UpdateFunc: func(any, any) { s.queue.AddAfter(reconcileKey, objectBatch) },
		DeleteFunc: func(any) { s.queue.AddAfter(reconcileKey, objectBatch) },
	}
	infs := []cache.SharedIndexInformer{
		svcInf.Informer(), sliceInf.Informer(), nodeInf.Informer(), secretInf.Informer(),
		h.IPAddressPools().Informer(), h.L2Advertisements().Informer(), h.BGPAdvertisements().Informer(),
		h.BGPPeers().Informer(), h.Communities().Informer(), h.BFDProfiles().Informer(),
	}
	for _, inf := range infs {
		if _, err := inf.AddEventHandler(trigger); err != nil {
			return err
		}
		s.synced = append(s.synced, inf.HasSynced)
	}
	return nil
}

func sliceServiceKey(obj any) ([]string, error) {
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil, fmt.Errorf("not an EndpointSlice: %T", obj)
	}
	name := es.Labels[discoveryv1.LabelServiceName]
	if name == "" {
		return nil, nil
	}
	return []string{es.Namespace + "/" + name}, nil
}

// endpointSlicesOf returns the EndpointSlices of a Service.
func (s *Speaker) endpointSlicesOf(svc *corev1.Service) []*discoveryv1.EndpointSlice {
	objs, _ := s.sliceIndex.ByIndex(byService, svc.Namespace+"/"+svc.Name)
	out := make([]*discoveryv1.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*discoveryv1.EndpointSlice))
	}
	return out
}
