// Package lean is the speaker's Kubernetes client: typed clients (client-go's
// gentype) for the few kinds the speaker reads and writes, over a scheme
// that knows only those kinds and Herald's, and informers over them.
//
// Why not client-go's clientset: importing it, its informers or any typed
// client of it links client-go's scheme of every built-in API group
// (fifty-odd groups of generated types, codecs and clients). That made
// the speaker binary 12 MB larger, and an idle speaker holds most of its
// mapped binary resident, on every node. The controller, which runs once,
// keeps the full clientset (internal/k8s/clientset).
package lean

import (
	"context"
	"fmt"
	"net/http"
	"reflect"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"

	heraldv1 "github.com/herald-lb/herald/api/v1beta1"
)

// ListWatcher lists and watches one kind. client-go's typed clients, real
// or fake, and Herald's generated ones satisfy it.
type ListWatcher[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// NodeClient reads Nodes.
type NodeClient interface {
	ListWatcher[*corev1.NodeList]
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Node, error)
}

// LeaseClient reads and writes the Leases of one namespace.
type LeaseClient interface {
	ListWatcher[*coordinationv1.LeaseList]
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Create(ctx context.Context, l *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, l *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// SpeakerStatusClient reads and writes SpeakerStatuses.
type SpeakerStatusClient interface {
	ListWatcher[*heraldv1.SpeakerStatusList]
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*heraldv1.SpeakerStatus, error)
	Create(ctx context.Context, s *heraldv1.SpeakerStatus, opts metav1.CreateOptions) (*heraldv1.SpeakerStatus, error)
	Update(ctx context.Context, s *heraldv1.SpeakerStatus, opts metav1.UpdateOptions) (*heraldv1.SpeakerStatus, error)
}

// API is everything the speaker reads and writes in the API server.
type API struct {
	Services       ListWatcher[*corev1.ServiceList]            // all namespaces
	EndpointSlices ListWatcher[*discoveryv1.EndpointSliceList] // all namespaces
	Nodes          NodeClient
	Secrets        ListWatcher[*corev1.SecretList] // Herald's namespace
	Leases         LeaseClient                     // Herald's namespace
	// Herald's kinds (cluster-scoped).
	Pools             ListWatcher[*heraldv1.IPAddressPoolList]
	L2Advertisements  ListWatcher[*heraldv1.L2AdvertisementList]
	BGPAdvertisements ListWatcher[*heraldv1.BGPAdvertisementList]
	BGPPeers          ListWatcher[*heraldv1.BGPPeerList]
	Communities       ListWatcher[*heraldv1.CommunityList]
	BFDProfiles       ListWatcher[*heraldv1.BFDProfileList]
	SpeakerStatuses   SpeakerStatusClient
	// Events writes core/v1 Events (for k8s.NewRecorder, with Scheme).
	Events record.EventSink
	// Scheme knows the kinds the speaker records events on.
	Scheme *runtime.Scheme
	// NoWatchList: the clients cannot serve client-go's streaming
	// watch-list (its fake clientsets); informers then list and watch.
	NoWatchList bool
}

// New builds the speaker's clients for the namespace Herald runs in.
func New(cfg *rest.Config, namespace string) (*API, error) {
	cfg = shared(cfg)
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	codecs := rest.CodecFactoryForGeneratedClient(scheme, serializer.NewCodecFactory(scheme)).WithoutConversion()
	params := runtime.NewParameterCodec(scheme)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes HTTP client: %w", err)
	}
	core, err := groupClient(cfg, codecs, httpClient, "/api", corev1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	discovery, err := groupClient(cfg, codecs, httpClient, "/apis", discoveryv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	coordination, err := groupClient(cfg, codecs, httpClient, "/apis", coordinationv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	herald, err := groupClient(cfg, codecs, httpClient, "/apis", heraldv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	return &API{
		Services:          newClient[*corev1.Service, *corev1.ServiceList]("services", core, params, "", builtIn),
		EndpointSlices:    newClient[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList]("endpointslices", discovery, params, "", builtIn),
		Nodes:             newClient[*corev1.Node, *corev1.NodeList]("nodes", core, params, "", builtIn),
		Secrets:           newClient[*corev1.Secret, *corev1.SecretList]("secrets", core, params, namespace, builtIn),
		Leases:            newClient[*coordinationv1.Lease, *coordinationv1.LeaseList]("leases", coordination, params, namespace, builtIn),
		Pools:             newClient[*heraldv1.IPAddressPool, *heraldv1.IPAddressPoolList]("ipaddresspools", herald, params, "", custom),
		L2Advertisements:  newClient[*heraldv1.L2Advertisement, *heraldv1.L2AdvertisementList]("l2advertisements", herald, params, "", custom),
		BGPAdvertisements: newClient[*heraldv1.BGPAdvertisement, *heraldv1.BGPAdvertisementList]("bgpadvertisements", herald, params, "", custom),
		BGPPeers:          newClient[*heraldv1.BGPPeer, *heraldv1.BGPPeerList]("bgppeers", herald, params, "", custom),
		Communities:       newClient[*heraldv1.Community, *heraldv1.CommunityList]("communities", herald, params, "", custom),
		BFDProfiles:       newClient[*heraldv1.BFDProfile, *heraldv1.BFDProfileList]("bfdprofiles", herald, params, "", custom),
		SpeakerStatuses:   newClient[*heraldv1.SpeakerStatus, *heraldv1.SpeakerStatusList]("speakerstatuses", herald, params, "", custom),
		Events:            eventSink{core},
		Scheme:            scheme,
	}, nil
}

// shared returns a copy of cfg whose clients, one per API group, share
// one rate limiter (QPS and Burst for the speaker as a whole, as
// client-go's clientset shares one among its groups).
func shared(cfg *rest.Config) *rest.Config {
	c := *cfg
	if c.RateLimiter == nil && c.QPS > 0 {
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.QPS, max(c.Burst, 1))
	}
	return &c
}

// NewScheme returns a scheme of the kinds the speaker reads, writes and
// records events on: Services, Nodes, Secrets, Events, EndpointSlices,
// Leases and Herald's kinds, with the meta types of their group versions.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	for gv, objs := range map[schema.GroupVersion][]runtime.Object{
		corev1.SchemeGroupVersion: {&corev1.Service{}, &corev1.ServiceList{}, &corev1.Node{}, &corev1.NodeList{},
			&corev1.Secret{}, &corev1.SecretList{}, &corev1.Event{}, &corev1.EventList{}},
		discoveryv1.SchemeGroupVersion:    {&discoveryv1.EndpointSlice{}, &discoveryv1.EndpointSliceList{}},
		coordinationv1.SchemeGroupVersion: {&coordinationv1.Lease{}, &coordinationv1.LeaseList{}},
	} {
		s.AddKnownTypes(gv, objs...)
		metav1.AddToGroupVersion(s, gv)
	}
	if err := heraldv1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// groupClient is a REST client for one API group version, as client-go's
// generated group clients configure theirs.
func groupClient(cfg *rest.Config, codecs runtime.NegotiatedSerializer, h *http.Client, apiPath string, gv schema.GroupVersion) (rest.Interface, error) {
	c := *cfg
	c.GroupVersion = &gv
	c.APIPath = apiPath
	c.NegotiatedSerializer = codecs
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientForConfigAndClient(&c, h)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client for %s: %w", gv, err)
	}
	return rc, nil
}

// The encodings of newClient's kinds, as client-go's generated clients
// have them: built-in kinds prefer protobuf, custom resources speak JSON.
const (
	builtIn = true
	custom  = false
)

// newClient is a typed client of one kind, namespaced or not ("").
func newClient[T interface {
	runtime.Object
	metav1.Object
}, L runtime.Object](resource string, rc rest.Interface, params runtime.ParameterCodec, namespace string, preferProtobuf bool) *gentype.ClientWithList[T, L] {
	var opts []gentype.Option[T]
	if preferProtobuf {
		opts = append(opts, gentype.PrefersProtobuf[T]())
	}
	return gentype.NewClientWithList[T, L](resource, rc, params, namespace, newObject[T], newObject[L], opts...)
}

// newObject returns a new zero object of the pointer type P.
func newObject[P any]() P {
	return reflect.New(reflect.TypeFor[P]().Elem()).Interface().(P)
}
