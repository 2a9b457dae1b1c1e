package controller_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/controller"
)

// churn drives random creates, updates and deletes of Services and pools
// against the real API server, with controller restarts in between.
type churn struct {
	*env
	rnd            *rand.Rand
	next           int
	live           []string
	stopController func()
}

func TestRandomizedChurn(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("HERALD_CHURN_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	// Every run draws a new seed, so the runs add up; 1,000 operations
	// with three controller restarts take about a minute under -race.
	ops := 1000
	if testing.Short() {
		ops = 300
	}
	t.Logf("seed %d (rerun with HERALD_CHURN_SEED=%d), %d operations", seed, seed, ops)
	c := &churn{env: newEnv(t), rnd: rand.New(rand.NewPCG(seed, seed^0x5eed))}
	// dual has room for every request, with herald.dev/address-count.
	c.pool("dual", nil, "198.51.100.0/25", "198.51.100.160/27", "2001:db8:d::/120")
	c.pool("v6", func(s *v1beta1.IPAddressPoolSpec) { s.AutoAssign = ptr(false) }, "2001:db8:e::/120")
	c.pool("small", func(s *v1beta1.IPAddressPoolSpec) { s.AutoAssign = ptr(false) }, "198.51.100.128/28")
	c.stopController = c.startController(controller.Options{})
	for i := 0; i < ops; i++ {
		if i > 0 && i%250 == 0 {
			c.stopController() // mid-flight: the next controller must cope with whatever it finds
			c.stopController = c.startController(controller.Options{})
			c.settleAndCheck()
		}
		c.step()
	}
	c.settleAndCheck()
	c.restartKeepsAddresses()
}

// restartKeepsAddresses restarts the controller once everything settled:
// every Service must show the addresses it showed before.
func (c *churn) restartKeepsAddresses() {
	c.t.Helper()
	held := c.shown()
	c.stopController()
	c.stopController = c.startController(controller.Options{})
	c.settleAndCheck()
	after := c.shown()
	several := 0
	for _, name := range slices.Sorted(maps.Keys(held)) {
		if !slices.Equal(held[name], after[name]) {
			c.t.Errorf("the restart changed %s from %v to %v", name, held[name], after[name])
		}
		if len(sameFamily(held[name], "::")) > 1 || len(sameFamily(held[name], "0.0.0.0")) > 1 {
			several++
		}
	}
	c.t.Logf("%d of %d Services hold several addresses of a family", several, len(held))
	if several == 0 {
		c.t.Error("no Service holds several addresses of a family: the churn misses herald.dev/address-count")
	}
}

// shown is the addresses of every Service the churn made, by name.
func (c *churn) shown() map[string][]string {
	c.t.Helper()
	list, err := c.kube.CoreV1().Services(c.ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	out := map[string][]string{}
	for i := range list.Items {
		if slices.Contains(c.live, list.Items[i].Name) {
			out[list.Items[i].Name] = ips(&list.Items[i])
		}
	}
	return out
}

// settleAndCheck waits until the controller has caught up with every
// change made so far, then checks that every LoadBalancer Service has its
// addresses and that no address is shown by two Services that may not
// share it. Status follows spec asynchronously, so both are polled with a
// deadline before they count as failures.
func (c *churn) settleAndCheck() {
	c.t.Helper()
	c.settle("dual")
	c.waitSettled()
	var violations []string
	deadline := time.Now().Add(20 * time.Second)
	for {
		if violations = c.sharingViolations(); len(violations) == 0 {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("after settling, addresses are shown by Services that may not share them:\n%s", strings.Join(violations, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (c *churn) step() {
	switch r := c.rnd.IntN(100); {
	case r < 35 && len(c.live) < 90 || len(c.live) == 0:
		c.create()
	case r < 55:
		c.remove()
	case r < 90:
		c.mutate()
	default:
		c.resizeSmallPool()
	}
}

var churnFamilies = []struct {
	policy corev1.IPFamilyPolicy
	fams   []corev1.IPFamily
}{
	{corev1.IPFamilyPolicySingleStack, []corev1.IPFamily{corev1.IPv4Protocol}},
	{corev1.IPFamilyPolicySingleStack, []corev1.IPFamily{corev1.IPv6Protocol}},
	{corev1.IPFamilyPolicyPreferDualStack, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}},
	{corev1.IPFamilyPolicyRequireDualStack, []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}},
}

func (c *churn) create() {
	name := fmt.Sprintf("s%04d", c.next)
	c.next++
	f := churnFamilies[c.rnd.IntN(len(churnFamilies))]
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns, Annotations: map[string]string{}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, AllocateLoadBalancerNodePorts: ptr(false),
			IPFamilyPolicy: &f.policy, IPFamilies: f.fams},
	}
	c.randomRequest(s)
	if _, err := c.kube.CoreV1().Services(c.ns).Create(c.ctx, s, metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("create %s: %v", name, err)
	}
	c.live = append(c.live, name)
}

// randomRequest sets ports, sharing key, traffic policy and pool choice.
func (c *churn) randomRequest(s *corev1.Service) {
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	ports := []corev1.ServicePort{{Name: "a", Protocol: corev1.ProtocolTCP, Port: 80}, {Name: "b", Protocol: corev1.ProtocolTCP, Port: 443},
		{Name: "c", Protocol: corev1.ProtocolUDP, Port: 53}, {Name: "d", Protocol: corev1.ProtocolTCP, Port: 53}}
	s.Spec.Ports = []corev1.ServicePort{ports[c.rnd.IntN(len(ports))]}
	delete(s.Annotations, v1beta1.AnnotationAllowSharedIP)
	if k := c.rnd.IntN(4); k > 0 {
		s.Annotations[v1beta1.AnnotationAllowSharedIP] = fmt.Sprintf("key-%d", k)
	}
	s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	s.Spec.Selector = nil
	if c.rnd.IntN(4) == 0 {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.Selector = map[string]string{"app": fmt.Sprintf("app-%d", c.rnd.IntN(2))}
	}
	delete(s.Annotations, v1beta1.AnnotationAddressPool)
	delete(s.Annotations, v1beta1.AnnotationAddressCount)
	single := s.Spec.IPFamilyPolicy != nil && *s.Spec.IPFamilyPolicy == corev1.IPFamilyPolicySingleStack
	switch {
	case single && c.rnd.IntN(5) == 0:
		if s.Spec.IPFamilies[0] == corev1.IPv4Protocol {
			s.Annotations[v1beta1.AnnotationAddressPool] = "small"
		} else {
			s.Annotations[v1beta1.AnnotationAddressPool] = "v6"
		}
	case c.rnd.IntN(4) == 0:
		// Several addresses per family: by sharing key, so that
		// Services under one key may share them (2 to 4, or 1 written
		// out), else any count; a mutation draws again.
		n := 1 + c.rnd.IntN(4)
		if k := s.Annotations[v1beta1.AnnotationAllowSharedIP]; k != "" && c.rnd.IntN(3) != 0 {
			n = 1 + int(k[len(k)-1]-'0')
		}
		s.Annotations[v1beta1.AnnotationAddressCount] = strconv.Itoa(n)
	}
}

// addressCount is how many addresses of each family s asks for.
func addressCount(s *corev1.Service) int {
	n, err := strconv.Atoi(s.Annotations[v1beta1.AnnotationAddressCount])
	if err != nil {
		return 1
	}
	return n
}

func (c *churn) remove() {
	if len(c.live) == 0 {
		return
	}
	i := c.rnd.IntN(len(c.live))
	if err := c.kube.CoreV1().Services(c.ns).Delete(c.ctx, c.live[i], metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		c.t.Fatal(err)
	}
	c.live = slices.Delete(c.live, i, i+1)
}

func (c *churn) mutate() {
	if len(c.live) == 0 {
		return
	}
	name := c.live[c.rnd.IntN(len(c.live))]
	toggle := c.rnd.IntN(6) == 0
	c.updateSvc(name, func(s *corev1.Service) {
		switch {
		case toggle && s.Spec.Type == corev1.ServiceTypeLoadBalancer:
			s.Spec.Type = corev1.ServiceTypeClusterIP
			s.Spec.AllocateLoadBalancerNodePorts = nil
			s.Spec.ExternalTrafficPolicy = ""
		case s.Spec.Type != corev1.ServiceTypeLoadBalancer:
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Spec.AllocateLoadBalancerNodePorts = ptr(false)
			c.randomRequest(s)
		default:
			c.randomRequest(s)
		}
	})
}

func (c *churn) resizeSmallPool() {
	sizes := []string{"198.51.100.128/28", "198.51.100.128/27", "198.51.100.128/29"}
	want := sizes[c.rnd.IntN(len(sizes))]
	c.updatePool("small", func(p *v1beta1.IPAddressPool) { p.Spec.Addresses = []string{want} })
}

// waitSettled waits until every LoadBalancer Service has the addresses
// of each family it needs; the pools are large enough for every request.
func (c *churn) waitSettled() {
	c.t.Helper()
	var missing []string
	ok := func() bool {
		missing = nil
		list, err := c.kube.CoreV1().Services(c.ns).List(c.ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, s := range list.Items {
			if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
				continue
			}
			if got := len(ips(&s)); got != len(s.Spec.IPFamilies)*addressCount(&s) {
				missing = append(missing, fmt.Sprintf("%s has %v (conditions %v)", s.Name, ips(&s), s.Status.Conditions))
			}
		}
		return len(missing) == 0
	}
	deadline := time.Now().Add(90 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			c.t.Fatalf("Services without their addresses after the churn:\n%v", missing)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sharingViolations lists addresses shown by two Services that may not
// share them.
func (c *churn) sharingViolations() []string {
	c.t.Helper()
	list, err := c.kube.CoreV1().Services(c.ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	var out []string
	holders := map[string][]*corev1.Service{}
	for i := range list.Items {
		s := &list.Items[i]
		for _, ip := range ips(s) {
			holders[ip] = append(holders[ip], s)
		}
	}
	for ip, hs := range holders {
		for i := 0; i < len(hs); i++ {
			for j := i + 1; j < len(hs); j++ {
				if why := incompatible(hs[i], hs[j]); why != "" {
					out = append(out, fmt.Sprintf("%s is shown by %s and %s: %s", ip, hs[i].Name, hs[j].Name, why))
				}
				if a, b := sameFamily(ips(hs[i]), ip), sameFamily(ips(hs[j]), ip); !slices.Equal(a, b) {
					out = append(out, fmt.Sprintf("%s is shown by %s (with %v) and %s (with %v): sharing Services share all of a family", ip, hs[i].Name, a, hs[j].Name, b))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// sameFamily is the addresses of list of ip's family.
func sameFamily(list []string, ip string) []string {
	var out []string
	for _, x := range list {
		if strings.Contains(x, ":") == strings.Contains(ip, ":") {
			out = append(out, x)
		}
	}
	return out
}

func incompatible(a, b *corev1.Service) string {
	ka, kb := a.Annotations[v1beta1.AnnotationAllowSharedIP], b.Annotations[v1beta1.AnnotationAllowSharedIP]
	if ka == "" || ka != kb {
		return fmt.Sprintf("sharing keys %q and %q", ka, kb)
	}
	if na, nb := addressCount(a), addressCount(b); na != nb {
		return fmt.Sprintf("address counts %d and %d", na, nb)
	}
	for _, pa := range a.Spec.Ports {
		for _, pb := range b.Spec.Ports {
			if pa.Port == pb.Port && pa.Protocol == pb.Protocol {
				return fmt.Sprintf("both use %s/%d", pa.Protocol, pa.Port)
			}
		}
	}
	la := a.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	lb := b.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	if la != lb {
		return "externalTrafficPolicy Local on one of them only"
	}
	return ""
}
