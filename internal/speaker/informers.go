package speaker

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	heraldlisters "github.com/herald-lb/herald/api/generated/listers/api/v1beta1"
	heraldv1 "github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/config"
	"github.com/herald-lb/herald/internal/installation"
	"github.com/herald-lb/herald/internal/k8s"
	"github.com/herald-lb/herald/internal/k8s/lean"
)

// objectBatch is how long object changes wait to be reconciled together.
const objectBatch = 30 * time.Millisecond

// kindInformers are the speaker's informers, one per kind it reads.
type kindInformers struct {
	services, slices, nodes, secrets, hold                        cache.SharedIndexInformer
	pools, l2Adverts, bgpAdverts, peers, communities, bfdProfiles cache.SharedIndexInformer
	status                                                        cache.SharedIndexInformer // this node's SpeakerStatus
}

// newKindInformers builds the informers: Services, EndpointSlices and
// Nodes slimmed (slimObject), the others without managedFields; the hold
// Lease and this node's SpeakerStatus (statusName) alone, by a field
// selector; Herald's configuration of installation inst alone, by a label
// selector.
func newKindInformers(api *lean.API, statusName string, inst installation.Name, log *slog.Logger) (kindInformers, error) {
	var errs error
	check := func(i cache.SharedIndexInformer, err error) cache.SharedIndexInformer {
		errs = errors.Join(errs, err)
		return i
	}
	slim := lean.InformerOptions{Transform: slimObject, NoWatchList: api.NoWatchList, Log: log}
	strip := lean.InformerOptions{Transform: k8s.DropManagedFields, NoWatchList: api.NoWatchList, Log: log}
	named := func(name string) lean.InformerOptions {
		o := strip
		o.Tweak = func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}
		return o
	}
	// Herald's configuration of this installation alone.
	own := strip
	own.Tweak = func(o *metav1.ListOptions) { o.LabelSelector = inst.Selector() }
	i := kindInformers{
		services:    check(lean.NewInformer(api.Services, &corev1.Service{}, slim)),
		slices:      check(lean.NewInformer(api.EndpointSlices, &discoveryv1.EndpointSlice{}, slim)),
		nodes:       check(lean.NewInformer(api.Nodes, &corev1.Node{}, slim)),
		secrets:     check(lean.NewInformer(api.Secrets, &corev1.Secret{}, strip)),
		hold:        check(lean.NewInformer(api.Leases, &coordinationv1.Lease{}, named(heraldv1.AnnounceHoldLease))),
		pools:       check(lean.NewInformer(api.Pools, &heraldv1.IPAddressPool{}, own)),
		l2Adverts:   check(lean.NewInformer(api.L2Advertisements, &heraldv1.L2Advertisement{}, own)),
		bgpAdverts:  check(lean.NewInformer(api.BGPAdvertisements, &heraldv1.BGPAdvertisement{}, own)),
		peers:       check(lean.NewInformer(api.BGPPeers, &heraldv1.BGPPeer{}, own)),
		communities: check(lean.NewInformer(api.Communities, &heraldv1.Community{}, own)),
		bfdProfiles: check(lean.NewInformer(api.BFDProfiles, &heraldv1.BFDProfile{}, own)),
		status:      check(lean.NewInformer(api.SpeakerStatuses, &heraldv1.SpeakerStatus{}, named(statusName))),
	}
	if errs != nil {
		return i, errs
	}
	return i, k8s.IndexSlicesByService(i.slices)
}

// all lists every informer, to start them.
func (i kindInformers) all() []cache.SharedIndexInformer {
	return []cache.SharedIndexInformer{i.services, i.slices, i.nodes, i.secrets, i.hold,
		i.pools, i.l2Adverts, i.bgpAdverts, i.peers, i.communities, i.bfdProfiles, i.status}
}

// cluster is what the speaker reads of the cluster: the informers'
// caches, the Services converted for announce, and the configuration in
// force (state).
type cluster struct {
	informers    []cache.SharedIndexInformer // all of them, started by sync
	synced       []cache.InformerSynced      // those announcing waits for
	serviceIndex cache.Indexer
	services     corelisters.ServiceLister
	sliceIndex   cache.Indexer
	nodes        corelisters.NodeLister
	holdLeases   coordinationlisters.LeaseNamespaceLister
	listers      k8s.ConfigListers
	ownStatus    cache.SharedIndexInformer // this node's SpeakerStatus, not among synced
	lastGood     *config.LastGood          // keeps refused edits' last valid versions in force
	svcCache     *serviceCache             // Services converted for announce
}

// newCluster builds the informers, their listers and handlers, over
// Herald's namespace ns, installation inst's configuration and this
// node's SpeakerStatus (statusName); batch asks for a reconcile of the
// changes seen (after objectBatch).
func newCluster(api *lean.API, statusName string, inst installation.Name, ns string, log *slog.Logger, batch func()) (*cluster, error) {
	i, err := newKindInformers(api, statusName, inst, log)
	if err != nil {
		return nil, err
	}
	c := &cluster{
		informers:    i.all(),
		serviceIndex: i.services.GetIndexer(),
		sliceIndex:   i.slices.GetIndexer(),
		nodes:        corelisters.NewNodeLister(i.nodes.GetIndexer()),
		holdLeases:   coordinationlisters.NewLeaseLister(i.hold.GetIndexer()).Leases(ns),
		ownStatus:    i.status,
		lastGood:     config.NewLastGood(),
		svcCache:     newServiceCache(),
	}
	c.services = corelisters.NewServiceLister(c.serviceIndex)
	c.listers = k8s.ConfigListers{
		Pools:       heraldlisters.NewIPAddressPoolLister(i.pools.GetIndexer()),
		L2Adverts:   heraldlisters.NewL2AdvertisementLister(i.l2Adverts.GetIndexer()),
		BGPAdverts:  heraldlisters.NewBGPAdvertisementLister(i.bgpAdverts.GetIndexer()),
		Peers:       heraldlisters.NewBGPPeerLister(i.peers.GetIndexer()),
		Communities: heraldlisters.NewCommunityLister(i.communities.GetIndexer()),
		BFDProfiles: heraldlisters.NewBFDProfileLister(i.bfdProfiles.GetIndexer()),
		Secrets:     corelisters.NewSecretLister(i.secrets.GetIndexer()).Secrets(ns),
	}
	return c, c.addHandlers(i, batch)
}

// sync starts the informers until ctx ends and waits for the ones
// announcing needs to sync; false means ctx ended first.
func (c *cluster) sync(ctx context.Context) bool {
	for _, inf := range c.informers {
		go inf.RunWithContext(ctx)
	}
	return k8s.WaitForCacheSync(ctx, c.synced...)
}

// addHandlers asks for a reconcile (batch) on every change.
func (c *cluster) addHandlers(i kindInformers, batch func()) error {
	// Object changes are batched for a few milliseconds: a burst of
	// Services, EndpointSlices and status writes costs one reconcile, not
	// one each. Member changes and takeovers seen by L2 (Trigger) are not
	// delayed.
	trigger := batchHandler(func(any) {}, batch)
	// Service and EndpointSlice changes also mark the Services to convert
	// again (serviceCache), in the same handler, before the reconcile is
	// queued.
	touchAndTrigger := batchHandler(c.svcCache.touchObject, batch)
	for _, inf := range []cache.SharedIndexInformer{i.services, i.slices} {
		if _, err := inf.AddEventHandler(touchAndTrigger); err != nil {
			return err
		}
		c.synced = append(c.synced, inf.HasSynced)
	}
	if _, err := i.nodes.AddEventHandler(nodeHandler(batch)); err != nil {
		return err
	}
	c.synced = append(c.synced, i.nodes.HasSynced)
	for _, inf := range []cache.SharedIndexInformer{i.secrets, i.hold, i.pools, i.l2Adverts, i.bgpAdverts, i.peers, i.communities, i.bfdProfiles} {
		if _, err := inf.AddEventHandler(trigger); err != nil {
			return err
		}
		c.synced = append(c.synced, inf.HasSynced)
	}
	return nil
}

// endpointSlicesOf returns the EndpointSlices of a Service.
func (c *cluster) endpointSlicesOf(svc *corev1.Service) []*discoveryv1.EndpointSlice {
	return k8s.SlicesOf(c.sliceIndex, svc)
}

// nodeHandler queues a reconcile (batch) for a Node added, deleted, or
// changed in what the speaker keeps of it (slimNode: labels, taints,
// conditions' status, addresses, deletion). The kubelet's periodic status
// reports change only what slimNode drops, and at 1,000 nodes they would
// otherwise cost a few full reconciles a second.
func nodeHandler(batch func()) cache.ResourceEventHandlerFuncs {
	h := batchHandler(func(any) {}, batch)
	h.UpdateFunc = func(old, obj any) {
		if !sameNodeButVersion(old, obj) {
			batch()
		}
	}
	return h
}

// sameNodeButVersion reports whether two versions of a (slimmed) Node
// differ only in their resourceVersion.
func sameNodeButVersion(old, obj any) bool {
	a, ok := old.(*corev1.Node)
	b, ok2 := obj.(*corev1.Node)
	if !ok || !ok2 {
		return false
	}
	ac, bc := *a, *b // shallow copies: only the copies' versions are cleared
	ac.ResourceVersion, bc.ResourceVersion = "", ""
	return reflect.DeepEqual(&ac, &bc)
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
