// Package clientset builds client-go's full clientset and Herald's
// generated one, and what needs them: the scheme of every built-in kind
// (for events), the event sink and the listers config.Build reads from
// generated informers. The controller and the tools use it. The speaker
// does not: importing client-go's clientset links all of Kubernetes' API
// groups (12 MB of binary, most of it resident), so the speaker uses
// internal/k8s/lean instead.
package clientset

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/herald-lb/herald/api/generated/clientset/versioned"
	heraldinformers "github.com/herald-lb/herald/api/generated/informers/externalversions/api/v1beta1"
	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/k8s"
)

// Clients are the API clients a binary needs, built from one configuration.
type Clients struct {
	Config *rest.Config
	Kube   kubernetes.Interface
	Herald versioned.Interface
	// Scheme knows the built-in kinds and Herald's, for events.
	Scheme *runtime.Scheme
}

// New builds the clients from the options.
func New(o k8s.ClientOptions) (*Clients, error) {
	cfg, err := k8s.RESTConfig(o)
	if err != nil {
		return nil, err
	}
	c := &Clients{Config: cfg}
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Herald, err = versioned.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Scheme, err = NewScheme(); err != nil {
		return nil, err
	}
	return c, nil
}

// NewScheme returns a scheme with the built-in kinds and Herald's, so that
// events can reference Herald's objects.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1beta1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// EventSink writes core/v1 Events through cs, for k8s.NewRecorder.
func EventSink(cs kubernetes.Interface) record.EventSink {
	return &typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")}
}

// ConfigListers takes the listers of Herald's generated informers and of
// the Secret informer of Herald's namespace.
func ConfigListers(h heraldinformers.Interface, secrets corelisters.SecretNamespaceLister) k8s.ConfigListers {
	return k8s.ConfigListers{
		Pools: h.IPAddressPools().Lister(), L2Adverts: h.L2Advertisements().Lister(),
		BGPAdverts: h.BGPAdvertisements().Lister(), Peers: h.BGPPeers().Lister(),
		Communities: h.Communities().Lister(), BFDProfiles: h.BFDProfiles().Lister(),
		Secrets: secrets,
	}
}
