package statusview

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-lb/herald/api/v1beta1"
)

// SpeakerStatusGroupResource is the speakers' per-node status resource.
var SpeakerStatusGroupResource = schema.GroupResource{Group: "herald.dev", Resource: "speakerstatuses"}

// Fetch reads the inputs of the view: every Service, the speakers' and
// controller's events, the speaker status objects when the cluster serves
// them (in whatever version it prefers), and the announcement hold Lease
// in Herald's namespace.
func Fetch(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, heraldNamespace string) (Inputs, error) {
	in := Inputs{Now: time.Now()}
	hold, err := kube.CoordinationV1().Leases(heraldNamespace).Get(ctx, v1beta1.AnnounceHoldLease, metav1.GetOptions{})
	switch {
	case err == nil:
		in.Hold = hold
	case apierrors.IsNotFound(err):
	case apierrors.IsForbidden(err):
		in.HoldUnknown = fmt.Sprintf("cannot read the Lease %s/%s (%v): whether the speakers' announcements are held is unknown", heraldNamespace, v1beta1.AnnounceHoldLease, err)
	default:
		return in, fmt.Errorf("reading the announcement hold: %w", err)
	}
	svcs, err := kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return in, fmt.Errorf("listing Services: %w", err)
	}
	in.Services = svcs.Items
	for _, reason := range []string{"NodeAssigned", "BGPAdvertised"} {
		evs, err := kube.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
		if err != nil {
			return in, fmt.Errorf("listing events: %w", err)
		}
		in.Events = append(in.Events, evs.Items...)
	}
	if err := fetchPools(ctx, dyn, &in); err != nil {
		return in, err
	}
	gvr, ok, err := speakerStatusResource(kube.Discovery())
	if err != nil || !ok {
		return in, err
	}
	list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return in, nil
	}
	if err != nil {
		return in, fmt.Errorf("listing %s: %w", SpeakerStatusGroupResource, err)
	}
	in.SpeakersServed = true
	for _, item := range list.Items {
		in.Speakers = append(in.Speakers, item.Object)
	}
	return in, nil
}

// speakerStatusResource finds the served version of speakerstatuses.
func speakerStatusResource(d discovery.DiscoveryInterface) (schema.GroupVersionResource, bool, error) {
	groups, err := d.ServerGroups()
	if err != nil {
		return schema.GroupVersionResource{}, false, fmt.Errorf("discovery: %w", err)
	}
	for _, g := range groups.Groups {
		if g.Name != SpeakerStatusGroupResource.Group {
			continue
		}
		res, err := d.ServerResourcesForGroupVersion(g.PreferredVersion.GroupVersion)
		if err != nil {
			return schema.GroupVersionResource{}, false, fmt.Errorf("discovery of %s: %w", g.PreferredVersion.GroupVersion, err)
		}
		for _, r := range res.APIResources {
			if r.Name == SpeakerStatusGroupResource.Resource {
				return schema.GroupVersionResource{Group: g.Name, Version: g.PreferredVersion.Version, Resource: r.Name}, true, nil
			}
		}
	}
	return schema.GroupVersionResource{}, false, nil
}

// fetchPools reads the IPAddressPools; a cluster without them, or a user
// who may not read them, leaves PoolsRead false.
func fetchPools(ctx context.Context, dyn dynamic.Interface, in *Inputs) error {
	list, err := dyn.Resource(v1beta1.SchemeGroupVersion.WithResource("ipaddresspools")).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || meta.IsNoMatchError(err):
		return nil
	case err != nil:
		return fmt.Errorf("listing IPAddressPools: %w", err)
	}
	for _, item := range list.Items {
		var p v1beta1.IPAddressPool
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &p); err != nil {
			return fmt.Errorf("IPAddressPool %s: %w", item.GetName(), err)
		}
		in.Pools = append(in.Pools, p)
	}
	in.PoolsRead = true
	return nil
}
