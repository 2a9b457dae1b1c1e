package lab

import (
	"context"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
)

// LoadBalancerService returns a selector-less Service of type
// LoadBalancer with allocateLoadBalancerNodePorts false and ports
// http 80 -> 8080 and https 443 -> 8443 (the pods' ports). With no family
// it is the cluster default (IPv4); with two it requires dual-stack.
// Change anything before CreateService.
func LoadBalancerService(namespace, name string, families ...corev1.IPFamily) *corev1.Service {
	no := false
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.ServiceSpec{
			Type:                          corev1.ServiceTypeLoadBalancer,
			AllocateLoadBalancerNodePorts: &no,
			IPFamilies:                    families,
			Ports: []corev1.ServicePort{
				{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)},
				{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(8443)},
			},
		},
	}
	if len(families) > 1 {
		p := corev1.IPFamilyPolicyRequireDualStack
		svc.Spec.IPFamilyPolicy = &p
	}
	return svc
}

// CreateService creates svc (and its namespace when missing).
func (cl *Cluster) CreateService(ctx context.Context, svc *corev1.Service) (*corev1.Service, error) {
	if err := cl.ensureNamespace(ctx, svc.Namespace); err != nil {
		return nil, err
	}
	created, err := cl.kube.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return created, nil
}

// DeleteService deletes the Service (the garbage collector removes its
// EndpointSlices).
func (cl *Cluster) DeleteService(ctx context.Context, namespace, name string) error {
	err := cl.kube.CoreV1().Services(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Service %s/%s: %w", namespace, name, err)
	}
	return nil
}

// SetLoadBalancerIngress writes status.loadBalancer.ingress with ipMode
// VIP, as a load balancer implementation would (for tests without Herald).
func (cl *Cluster) SetLoadBalancerIngress(ctx context.Context, svc *corev1.Service, ips ...netip.Addr) error {
	vip := corev1.LoadBalancerIPModeVIP
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := cl.kube.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.LoadBalancer.Ingress = nil
		for _, ip := range ips {
			cur.Status.LoadBalancer.Ingress = append(cur.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip.String(), IPMode: &vip})
		}
		_, err = cl.kube.CoreV1().Services(svc.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("load balancer status of %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return nil
}
