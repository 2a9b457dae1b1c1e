package controller

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	heraldinformers "github.com/herald-lb/herald/api/generated/informers/externalversions"
	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/k8s"
	"github.com/herald-lb/herald/internal/k8s/clientset"
	"github.com/herald-lb/herald/internal/service"
)

// configKey is the only key of the config queue.
const configKey = "config"

// servicesByIngressIP indexes Services by the addresses their status
// shows, so that the Services sharing an address are found without a list.
const servicesByIngressIP = "ingressIP"

func indexIngressIPs(obj any) ([]string, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return nil, nil
	}
	ips := service.IngressIPs(svc)
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out, nil
}

func (c *Controller) setupInformers() error {
	c.kubeInformers = informers.NewSharedInformerFactory(c.kube, 0)
	c.lightInformers = informers.NewSharedInformerFactoryWithOptions(c.kube, 0, informers.WithTransform(k8s.DropManagedFields))
	c.secretInformers = informers.NewSharedInformerFactoryWithOptions(c.kube, 0, informers.WithNamespace(c.opts.Namespace))
	// Herald's objects of this installation alone (configuration and
	// SpeakerStatuses): another installation's are never read nor written.
	c.heraldInformers = heraldinformers.NewSharedInformerFactoryWithOptions(c.herald, 0,
		heraldinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = c.opts.Installation.Selector() }))

	svcInf := c.kubeInformers.Core().V1().Services()
	if err := svcInf.Informer().AddIndexers(cache.Indexers{servicesByIngressIP: indexIngressIPs}); err != nil {
		return err
	}
	c.serviceIndex = svcInf.Informer().GetIndexer()
	nsInf := c.lightInformers.Core().V1().Namespaces()
	nodeInf := c.lightInformers.Core().V1().Nodes()
	sliceInf := c.lightInformers.Discovery().V1().EndpointSlices()
	if err := k8s.IndexSlicesByService(sliceInf.Informer()); err != nil {
		return err
	}
	c.nodes, c.sliceIndex = nodeInf.Lister(), sliceInf.Informer().GetIndexer()
	secretInf := c.secretInformers.Core().V1().Secrets()
	h := c.heraldInformers.Herald().V1beta1()
	c.services, c.namespaces, c.secrets = svcInf.Lister(), nsInf.Lister(), secretInf.Lister()
	c.listers = clientset.ConfigListers(h, c.secrets.Secrets(c.opts.Namespace))

	if _, err := svcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onService(nil, obj) },
		UpdateFunc: func(old, obj any) { c.onService(old, obj) },
		DeleteFunc: c.onServiceDeleted,
	}); err != nil {
		return err
	}
	if _, err := nsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, obj any) {
			if !maps.Equal(old.(*corev1.Namespace).Labels, obj.(*corev1.Namespace).Labels) {
				c.requeuePending()
			}
		},
	}); err != nil {
		return err
	}
	if _, err := nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.enqueueAllServices() },
		UpdateFunc: func(old, obj any) {
			if nodeAnnouncementChanged(old.(*corev1.Node), obj.(*corev1.Node)) {
				c.enqueueAllServices()
			}
		},
		DeleteFunc: func(any) { c.enqueueAllServices() },
	}); err != nil {
		return err
	}
	if _, err := sliceInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueSliceService,
		UpdateFunc: func(_, obj any) { c.enqueueSliceService(obj) },
		DeleteFunc: c.enqueueSliceService,
	}); err != nil {
		return err
	}
	configChanged := cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.configQueue.Add(configKey) },
		UpdateFunc: func(old, obj any) {
			// The configuration is built from specs: the controller's own
			// status writes must not rebuild it (and, through the pools'
			// status, write again).
			if !onlyStatusChanged(old, obj) {
				c.configQueue.Add(configKey)
			}
		},
		DeleteFunc: func(any) { c.configQueue.Add(configKey) },
	}
	poolChanged := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueuePool(obj) },
		UpdateFunc: c.onPoolUpdate,
		DeleteFunc: func(obj any) { c.enqueuePool(obj) },
	}
	for _, inf := range []cache.SharedIndexInformer{
		h.IPAddressPools().Informer(), h.L2Advertisements().Informer(), h.BGPAdvertisements().Informer(),
		h.BGPPeers().Informer(), h.Communities().Informer(), h.BFDProfiles().Informer(), secretInf.Informer(),
	} {
		if _, err := inf.AddEventHandler(configChanged); err != nil {
			return err
		}
	}
	if _, err := h.IPAddressPools().Informer().AddEventHandler(poolChanged); err != nil {
		return err
	}
	c.synced = []cache.InformerSynced{
		svcInf.Informer().HasSynced, nsInf.Informer().HasSynced, nodeInf.Informer().HasSynced, sliceInf.Informer().HasSynced, secretInf.Informer().HasSynced,
		h.IPAddressPools().Informer().HasSynced, h.L2Advertisements().Informer().HasSynced,
		h.BGPAdvertisements().Informer().HasSynced, h.BGPPeers().Informer().HasSynced,
		h.Communities().Informer().HasSynced, h.BFDProfiles().Informer().HasSynced,
	}
	return c.setupSpeakerInformers()
}

// onService queues a Service that is, or was, Herald's. Services of other
// classes never enter the queue.
func (c *Controller) onService(old, obj any) {
	svc := obj.(*corev1.Service)
	var oldSvc *corev1.Service
	if old != nil {
		oldSvc = old.(*corev1.Service)
	}
	if c.opts.Class.IsOurs(svc) || c.opts.Class.IsOurs(oldSvc) || c.holds(cache.MetaObjectToName(svc)) {
		c.serviceQueue.Add(cache.MetaObjectToName(svc))
	}
}

func (c *Controller) onServiceDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return
	}
	key := cache.MetaObjectToName(svc)
	c.mu.Lock()
	c.tombstones[key] = svc
	c.mu.Unlock()
	c.serviceQueue.Add(key)
}

func (c *Controller) enqueuePool(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if m, ok := obj.(interface{ GetName() string }); ok {
		c.poolQueue.Add(m.GetName())
	}
}

// poolStatusEcho is how long a pool's status-only change (in the main the
// echo of the controller's own status write) waits before the pool's
// status is computed again: while Services are being assigned, each write
// would otherwise bring the next at once, a pool status write per round
// trip competing with the Services' own.
const poolStatusEcho = time.Second

// onPoolUpdate queues a pool whose spec or metadata changed at once, and
// one whose status alone changed after poolStatusEcho.
func (c *Controller) onPoolUpdate(old, obj any) {
	if p, ok := obj.(*v1beta1.IPAddressPool); ok && onlyStatusChanged(old, obj) {
		c.poolQueue.AddAfter(p.Name, poolStatusEcho)
		return
	}
	c.enqueuePool(obj)
}

// onlyStatusChanged reports whether an update of an object that counts
// spec changes in metadata.generation (a CRD with a status subresource)
// left its generation, labels, annotations, finalizers and deletion alone.
// Objects without a generation (Secrets) never qualify.
func onlyStatusChanged(old, obj any) bool {
	o, errOld := meta.Accessor(old)
	n, errNew := meta.Accessor(obj)
	if errOld != nil || errNew != nil || n.GetGeneration() == 0 {
		return false
	}
	return o.GetGeneration() == n.GetGeneration() && maps.Equal(o.GetLabels(), n.GetLabels()) &&
		maps.Equal(o.GetAnnotations(), n.GetAnnotations()) && slices.Equal(o.GetFinalizers(), n.GetFinalizers()) &&
		o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp())
}

func (c *Controller) holds(key cache.ObjectName) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.alloc.Lookup(key.String())
	return ok
}

// enqueueAllServices queues every Service Herald handles or has written
// to (a Service no longer Herald's gets its status cleared).
func (c *Controller) enqueueAllServices() {
	svcs, _ := c.services.List(labels.Everything())
	for _, s := range svcs {
		if c.opts.Class.IsOurs(s) || ownsFields(s, c.manager) {
			c.serviceQueue.Add(cache.MetaObjectToName(s))
		}
	}
}

// requeuePending queues every Service waiting for an address: something
// that could help has changed.
func (c *Controller) requeuePending() {
	c.mu.Lock()
	keys := make([]cache.ObjectName, 0, len(c.pending))
	for k := range c.pending {
		keys = append(keys, k)
	}
	c.mu.Unlock()
	for _, k := range keys {
		c.serviceQueue.Add(k)
	}
}

func (c *Controller) enqueueAllPools() {
	pools, _ := c.listers.Pools.List(labels.Everything())
	for _, p := range pools {
		c.poolQueue.Add(p.Name)
	}
}

func (c *Controller) enqueueSliceService(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok || es.Labels[discoveryv1.LabelServiceName] == "" {
		return
	}
	key := cache.ObjectName{Namespace: es.Namespace, Name: es.Labels[discoveryv1.LabelServiceName]}
	if svc, err := c.services.Services(key.Namespace).Get(key.Name); err == nil && c.opts.Class.IsOurs(svc) {
		c.serviceQueue.Add(key)
		c.enqueueLocalSharers(svc)
	}
}

// enqueueLocalSharers queues the Services holding an address with svc
// when it has externalTrafficPolicy: Local and a sharing key: where
// their address is announced, and their condition, depend on its
// endpoints too.
func (c *Controller) enqueueLocalSharers(svc *corev1.Service) {
	if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal || svc.Annotations[v1beta1.AnnotationAllowSharedIP] == "" {
		return
	}
	for _, ip := range service.IngressIPs(svc) {
		objs, _ := c.serviceIndex.ByIndex(servicesByIngressIP, ip.String())
		for _, o := range objs {
			if s := o.(*corev1.Service); s.Namespace != svc.Namespace || s.Name != svc.Name {
				c.serviceQueue.Add(cache.MetaObjectToName(s))
			}
		}
	}
}

// nodeAnnouncementChanged: only what decides whether a node may announce
// is worth requeueing every Service for.
func nodeAnnouncementChanged(a, b *corev1.Node) bool {
	if !maps.Equal(a.Labels, b.Labels) || !slices.Equal(a.Spec.Taints, b.Spec.Taints) || !slices.Equal(a.Status.Addresses, b.Status.Addresses) {
		return true
	}
	cond := func(n *corev1.Node, t corev1.NodeConditionType) corev1.ConditionStatus {
		for _, c := range n.Status.Conditions {
			if c.Type == t {
				return c.Status
			}
		}
		return ""
	}
	for _, t := range []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeNetworkUnavailable} {
		if cond(a, t) != cond(b, t) {
			return true
		}
	}
	return false
}
