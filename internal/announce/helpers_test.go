package announce

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/config"
)

func readyNode(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

func nodes(names ...string) []*corev1.Node {
	out := make([]*corev1.Node, len(names))
	for i, n := range names {
		out[i] = readyNode(n, map[string]string{"kubernetes.io/hostname": n})
	}
	return out
}

// cfg builds a configuration from objects.
func cfg(t *testing.T, in config.Input) *config.Config {
	t.Helper()
	c, problems := config.Build(in)
	if len(problems) > 0 {
		t.Fatalf("test configuration has problems: %v", problems)
	}
	return c
}

func pool(name string, addrs ...string) *v1beta1.IPAddressPool {
	return &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1beta1.IPAddressPoolSpec{Addresses: addrs}}
}

// nonePool is a pool whose shared Local addresses have no fallback.
func nonePool(name string, addrs ...string) *v1beta1.IPAddressPool {
	p := pool(name, addrs...)
	p.Spec.Sharing = &v1beta1.PoolSharing{LocalFallback: v1beta1.LocalFallbackNone}
	return p
}

func l2ad(name string, mutate func(*v1beta1.L2AdvertisementSpec)) *v1beta1.L2Advertisement {
	a := &v1beta1.L2Advertisement{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if mutate != nil {
		mutate(&a.Spec)
	}
	return a
}

func bgpad(name string, mutate func(*v1beta1.BGPAdvertisementSpec)) *v1beta1.BGPAdvertisement {
	a := &v1beta1.BGPAdvertisement{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if mutate != nil {
		mutate(&a.Spec)
	}
	return a
}

func peer(name, addr string, asn int64, mutate func(*v1beta1.BGPPeerSpec)) *v1beta1.BGPPeer {
	p := &v1beta1.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1beta1.BGPPeerSpec{MyASN: 64513, PeerASN: asn, PeerAddress: addr, PeerPort: 179}}
	if mutate != nil {
		mutate(&p.Spec)
	}
	return p
}

func svc(key string, ips ...string) Service {
	s := Service{Key: key, Endpoints: Endpoints{AnyReady: true, Local: map[string]bool{}}}
	for _, ip := range ips {
		s.IPs = append(s.IPs, netip.MustParseAddr(ip))
	}
	return s
}

func local(s Service, nodes ...string) Service {
	s.ETPLocal = true
	s.Endpoints = Endpoints{Local: map[string]bool{}, AnyReady: len(nodes) > 0}
	for _, n := range nodes {
		s.Endpoints.Local[n] = true
	}
	return s
}

func owners(r L2Result) map[string]string {
	out := map[string]string{}
	for _, o := range r.Owners {
		out[o.IP.String()] = o.Node
	}
	return out
}

func sel(kv ...string) metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return metav1.LabelSelector{MatchLabels: m}
}

func ptr[T any](v T) *T { return &v }
