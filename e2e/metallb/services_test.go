package metallb

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/internal/service"
	"github.com/herald-lb/herald/test/labkit"
)

const testNS = "mlb"

// metallbConfig is MetalLB's configuration: one pool in the lab's L2 range
// (both families) with an L2Advertisement on every node, and one in the
// lab's BGP range (IPv4: MetalLB's native BGP speaker carries only the
// session's own family) that Services must ask for, advertised to the
// lab's router by every node.
var metallbConfig = fmt.Sprintf(`apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata: {name: lab, namespace: %[1]s}
spec:
  addresses: [%[2]s, %[3]s]
---
apiVersion: metallb.io/v1beta1
kind: L2Advertisement
metadata: {name: lab, namespace: %[1]s}
spec:
  ipAddressPools: [lab]
---
apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata: {name: %[4]s, namespace: %[1]s}
spec:
  addresses: [%[5]s]
  autoAssign: false
---
apiVersion: metallb.io/v1beta2
kind: BGPPeer
metadata: {name: router, namespace: %[1]s}
spec:
  myASN: %[6]d
  peerASN: %[7]d
  peerAddress: %[8]s
  holdTime: 9s
---
apiVersion: metallb.io/v1beta1
kind: BGPAdvertisement
metadata: {name: %[4]s, namespace: %[1]s}
spec:
  ipAddressPools: [%[4]s]
`, metallbNS, lab.L2PoolV4, lab.L2PoolV6, bgpPool, lab.BGPPoolV4, lab.NodeASN, lab.RouterASN, lab.RouterIPv4)

// bgpPool is the MetalLB (and, converted, Herald) pool announced by BGP.
const bgpPool = "bgp"

// bgpServices are the Services in the BGP pool, asking for it with
// metallb.io/address-pool.
func bgpServices() []*corev1.Service {
	var out []*corev1.Service
	for i := range 4 {
		s := lab.LoadBalancerService(testNS, fmt.Sprintf("bgp-%d", i))
		s.Annotations = map[string]string{"metallb.io/address-pool": bgpPool}
		out = append(out, s)
	}
	return out
}

// Addresses in the pool requested by annotation.
const (
	requestedIP = "198.51.100.90"
	sharedIP    = "198.51.100.91"
)

// testServices are the 20 Services MetalLB serves before the takeover:
// automatic IPv4, IPv6 and dual-stack ones, one requesting its address
// with metallb.io/loadBalancerIPs, and a pair sharing one address with
// metallb.io/allow-shared-ip (on different ports).
func testServices() []*corev1.Service {
	var out []*corev1.Service
	for i := range 14 {
		out = append(out, lab.LoadBalancerService(testNS, fmt.Sprintf("v4-%d", i)))
	}
	for i := range 2 {
		out = append(out, lab.LoadBalancerService(testNS, fmt.Sprintf("v6-%d", i), corev1.IPv6Protocol))
	}
	out = append(out, lab.LoadBalancerService(testNS, "dual", corev1.IPv4Protocol, corev1.IPv6Protocol))
	req := lab.LoadBalancerService(testNS, "requested")
	req.Annotations = map[string]string{"metallb.io/loadBalancerIPs": requestedIP}
	out = append(out, req)
	for i, name := range []string{"shared-a", "shared-b"} {
		s := lab.LoadBalancerService(testNS, name)
		s.Annotations = map[string]string{"metallb.io/loadBalancerIPs": sharedIP, "metallb.io/allow-shared-ip": "web"}
		if i == 1 {
			s.Spec.Ports = []corev1.ServicePort{{Name: "alt", Protocol: corev1.ProtocolTCP, Port: 8080, TargetPort: intstr.FromInt32(8080)}}
		}
		out = append(out, s)
	}
	return out
}

// createServices creates the Services (L2 and BGP) with backends on every node and
// waits until MetalLB has given each its addresses (one per family,
// annotated metallb.io/ip-allocated-from-pool); it returns the addresses
// by Service name.
func createServices(t *testing.T, ctx context.Context, l *lab.Lab) map[string][]netip.Addr {
	t.Helper()
	var nodes []string
	for _, n := range l.Nodes() {
		nodes = append(nodes, n.Name)
	}
	svcs := append(testServices(), bgpServices()...)
	for _, svc := range svcs {
		created, err := l.CreateService(ctx, svc)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.SetEndpoints(ctx, created, nodes...); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string][]netip.Addr{}
	for _, svc := range svcs {
		labkit.Eventually(t, 2*time.Minute, "MetalLB's addresses for "+svc.Name, func() bool {
			s, err := l.Client().CoreV1().Services(testNS).Get(ctx, svc.Name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			ips := service.IngressIPs(s)
			_, byMetalLB := service.AssignedByMetalLB(s)
			out[svc.Name] = ips
			return byMetalLB && len(ips) == len(s.Spec.IPFamilies) && len(ips) > 0
		})
	}
	return out
}

// addresses reads every test Service's addresses now.
func addresses(t *testing.T, ctx context.Context, l *lab.Lab) map[string][]netip.Addr {
	t.Helper()
	list, err := l.Client().CoreV1().Services(testNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]netip.Addr{}
	for i := range list.Items {
		out[list.Items[i].Name] = service.IngressIPs(&list.Items[i])
	}
	return out
}

// vips is every distinct address of the Services, sorted.
func vips(byService map[string][]netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, ips := range byService {
		out = append(out, ips...)
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

// probe sends one ARP who-has or multicast NS for vip from the client.
func probe(t *testing.T, ctx context.Context, l *lab.Lab, vip netip.Addr) []lab.Answer {
	t.Helper()
	var answers []lab.Answer
	var err error
	if vip.Is4() {
		answers, err = l.ARPProbe(ctx, vip)
	} else {
		answers, err = l.NDPProbe(ctx, vip, false)
	}
	if err != nil {
		t.Fatal(err)
	}
	return answers
}

// waitOneNode waits until exactly one lab node answers for vip and
// returns it.
func waitOneNode(t *testing.T, ctx context.Context, l *lab.Lab, vip netip.Addr, who string) string {
	t.Helper()
	var node string
	labkit.Eventually(t, time.Minute, fmt.Sprintf("one node (%s) answering for %s", who, vip), func() bool {
		a := probe(t, ctx, l, vip)
		nodes := lab.Probe{Answers: a}.Nodes()
		if len(nodes) == 1 && nodes[0] != "" {
			node = nodes[0]
			return true
		}
		return false
	})
	return node
}

func startMonitor(l *lab.Lab, vip netip.Addr, every time.Duration) (*lab.Monitor, error) {
	if vip.Is4() {
		return l.StartARPMonitor(vip, every)
	}
	return l.StartNDPMonitor(vip, every)
}

func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
