package speaker

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/herald-lb/herald/api/generated/clientset/versioned"
	heraldinformers "github.com/herald-lb/herald/api/generated/informers/externalversions"
	heraldv1 "github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/k8s"
)

// objectBatch is how long object changes wait to be reconciled together.
const objectBatch = 30 * time.Millisecond

func (s *Speaker) setupInformers(kube kubernetes.Interface, herald versioned.Interface) error {
	strip := k8s.WithoutManagedFields()
	s.kubeInformers = informers.NewSharedInformerFactoryWithOptions(kube, 0, slimObjects())
	s.secretInformers = informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(s.opts.Namespace), strip)
	s.heraldInformers = heraldinformers.NewSharedInformerFactory(herald, 0)
	s.holdInformers = informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(s.opts.Namespace), strip,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", heraldv1.AnnounceHoldLease).String()
		}))

	svcInf := s.kubeInformers.Core().V1().Services()
	sliceInf := s.kubeInformers.Discovery().V1().EndpointSlices()
	nodeInf := s.kubeInformers.Core().V1().Nodes()
	secretInf := s.secretInformers.Core().V1().Secrets()
	holdInf := s.holdInformers.Coordination().V1().Leases()
	h := s.heraldInformers.Herald().V1beta1()
	if err := k8s.IndexSlicesByService(sliceInf.Informer()); err != nil {
		return err
	}
	s.services, s.slices, s.nodes = svcInf.Lister(), sliceInf.Lister(), nodeInf.Lister()
	s.sliceIndex = sliceInf.Informer().GetIndexer()
	s.holdLeases = holdInf.Lister().Leases(s.opts.Namespace)
	s.listers = k8s.NewConfigListers(h, secretInf.Lister().Secrets(s.opts.Namespace))
	// Object changes are batched for a few milliseconds: a burst of
	// Services, EndpointSlices and status writes costs one reconcile, not
	// one each. Member changes and hand-over confirmations (Trigger) are not
	// delayed.
	batch := func() { s.queue.AddAfter(reconcileKey, objectBatch) }
	trigger := batchHandler(func(any) {}, batch)
	// Service and EndpointSlice changes also mark the Services to convert
	// again (serviceCache), in the same handler, before the reconcile is
	// queued.
	touchAndTrigger := batchHandler(s.svcCache.touchObject, batch)
	for _, inf := range []cache.SharedIndexInformer{svcInf.Informer(), sliceInf.Informer()} {
		if _, err := inf.AddEventHandler(touchAndTrigger); err != nil {
			return err
		}
		s.synced = append(s.synced, inf.HasSynced)
	}
	infs := []cache.SharedIndexInformer{
		nodeInf.Informer(), secretInf.Informer(), holdInf.Informer(),
		h.IPAddressPools().Informer(), h.L2Advertisements().Informer(), h.BGPAdvertisements().Informer(),
		h.BGPPeers().Informer(), h.Communities().Informer(), h.BFDProfiles().Informer(),
	}
	for _, inf := range infs {
		if _, err := inf.AddEventHandler(trigger); err != nil {
			return err
		}
		s.synced = append(s.synced, inf.HasSynced)
	}
	// Not among synced: announcing never waits for the status object.
	return s.watchOwnStatus(herald)
}

// endpointSlicesOf returns the EndpointSlices of a Service.
func (s *Speaker) endpointSlicesOf(svc *corev1.Service) []*discoveryv1.EndpointSlice {
	return k8s.SlicesOf(s.sliceIndex, svc)
}

// batchHandler is an event handler that calls touch with every object an
// event names (both versions of an update), then batch.
func batchHandler(touch func(obj any), batch func()) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { touch(obj); batch() },
		UpdateFunc: func(old, obj any) {
			touch(old)
			touch(obj)
			batch()
		},
		DeleteFunc: func(obj any) { touch(obj); batch() },
	}
}
