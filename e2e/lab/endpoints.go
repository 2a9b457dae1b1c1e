package lab

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Endpoint is the pod on Node in one of the states the endpoint slice
// controller reports (a ready pod is Ready and Serving; a terminating one
// is Terminating and maybe still Serving).
type Endpoint struct {
	Node                        string
	Ready, Serving, Terminating bool
}

// ReadyEndpoint is the pod on node, ready and serving.
func ReadyEndpoint(node string) Endpoint { return Endpoint{Node: node, Ready: true, Serving: true} }

// SetEndpoints makes the pods on nodes the Service's ready endpoints.
func (l *Lab) SetEndpoints(ctx context.Context, svc *corev1.Service, nodes ...string) error {
	eps := make([]Endpoint, 0, len(nodes))
	for _, n := range nodes {
		eps = append(eps, ReadyEndpoint(n))
	}
	return l.SetEndpointStates(ctx, svc, eps...)
}

// SetEndpointStates writes the Service's EndpointSlices as the endpoint
// slice controller would: one per IP family of the Service, with the
// Service's ports (target ports), nodeName and conditions, labelled
// kubernetes.io/service-name and managed-by lab.herald.dev. No endpoint
// gives empty slices.
func (l *Lab) SetEndpointStates(ctx context.Context, svc *corev1.Service, eps ...Endpoint) error {
	cur, err := l.kube.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("endpoints of %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	ports, err := slicePorts(cur)
	if err != nil {
		return err
	}
	for _, fam := range []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol} {
		if !slices.Contains(cur.Spec.IPFamilies, fam) {
			if err := l.deleteSlice(ctx, cur, fam); err != nil {
				return err
			}
			continue
		}
		slice, err := l.buildSlice(cur, fam, ports, eps)
		if err != nil {
			return err
		}
		if err := l.applySlice(ctx, slice); err != nil {
			return err
		}
	}
	return nil
}

func sliceName(svc *corev1.Service, fam corev1.IPFamily) string {
	return svc.Name + "-lab-" + strings.ToLower(string(fam))
}

func slicePorts(svc *corev1.Service) ([]discoveryv1.EndpointPort, error) {
	var out []discoveryv1.EndpointPort
	for _, p := range svc.Spec.Ports {
		port := p.TargetPort.IntVal
		if p.TargetPort.StrVal != "" {
			return nil, fmt.Errorf("Service %s/%s port %s: named target port %q; the lab's pods have numbered ports only", svc.Namespace, svc.Name, p.Name, p.TargetPort.StrVal)
		}
		if port == 0 {
			port = p.Port
		}
		out = append(out, discoveryv1.EndpointPort{Name: &p.Name, Protocol: &p.Protocol, Port: &port})
	}
	return out, nil
}

func (l *Lab) buildSlice(svc *corev1.Service, fam corev1.IPFamily, ports []discoveryv1.EndpointPort, eps []Endpoint) (*discoveryv1.EndpointSlice, error) {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: sliceName(svc, fam), Labels: map[string]string{
			discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: EndpointSliceManager,
		}},
		AddressType: discoveryv1.AddressType(fam),
		Ports:       ports,
		Endpoints:   []discoveryv1.Endpoint{},
	}
	for _, e := range eps {
		n, err := l.Node(e.Node)
		if err != nil {
			return nil, fmt.Errorf("endpoint of %s/%s: %w", svc.Namespace, svc.Name, err)
		}
		addr := n.Pod.IPv4
		if fam == corev1.IPv6Protocol {
			addr = n.Pod.IPv6
		}
		s.Endpoints = append(s.Endpoints, endpointOf(e, n, addr))
	}
	return s, nil
}

func endpointOf(e Endpoint, n Node, addr netip.Addr) discoveryv1.Endpoint {
	ready, serving, term := e.Ready, e.Serving, e.Terminating
	name := n.Name
	return discoveryv1.Endpoint{
		Addresses:  []string{addr.String()},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &term},
		NodeName:   &name,
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Name: n.Pod.Name},
	}
}

func (l *Lab) applySlice(ctx context.Context, s *discoveryv1.EndpointSlice) error {
	api := l.kube.DiscoveryV1().EndpointSlices(s.Namespace)
	cur, err := api.Get(ctx, s.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = api.Create(ctx, s, metav1.CreateOptions{})
	case err == nil:
		s.ResourceVersion = cur.ResourceVersion
		_, err = api.Update(ctx, s, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("EndpointSlice %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

func (l *Lab) deleteSlice(ctx context.Context, svc *corev1.Service, fam corev1.IPFamily) error {
	err := l.kube.DiscoveryV1().EndpointSlices(svc.Namespace).Delete(ctx, sliceName(svc, fam), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("EndpointSlice %s/%s: %w", svc.Namespace, sliceName(svc, fam), err)
	}
	return nil
}
