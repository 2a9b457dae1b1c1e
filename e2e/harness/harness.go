// Package harness is Herald in the lab for the end-to-end suites: Herald
// installed once per test package (Suite.Herald), a LoadBalancer Service
// with its pods (Suite.Service), and the node answering for an address
// (Owner, Nobody, Probe). What "served" means for a probe log is
// lab.ProbeLog.Served; waiting is labkit.Eventually.
package harness

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// Suite is Herald installed once in a test package's shared lab, with
// what the package's tests start from.
type Suite struct {
	// Namespace holds the suite's Services.
	Namespace string
	// BaseConfig is the Herald configuration (YAML) applied at install.
	BaseConfig string
	// Prepare, when set, runs on every Herald call before the nodes are
	// healed: it puts back what a test may have changed (the base
	// configuration, a router).
	Prepare func(ctx context.Context, l *lab.Lab, h *deploy.Herald) error
	// Settle, when set, runs on every Herald call after the nodes are
	// healed: it waits for what the suite's tests assume (BGP sessions).
	Settle func(t testing.TB, l *lab.Lab)

	once   sync.Once
	images deploy.Images
	h      *deploy.Herald
	err    error
}

// Herald returns Herald running in the package's lab (installed on the
// first call) with every speaker running and every link up, after the
// suite's Prepare and Settle.
func (s *Suite) Herald(t testing.TB) (*lab.Lab, *deploy.Herald) {
	t.Helper()
	l := lab.Shared(t)
	ctx := context.Background()
	s.once.Do(func() { s.h, s.err = deploy.Start(ctx, l, &s.images, s.BaseConfig) })
	if s.err != nil {
		t.Fatal(s.err)
	}
	h := s.h
	h.LogsOnFailure(t)
	if s.Prepare != nil {
		if err := s.Prepare(ctx, l, h); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Settle != nil {
		s.Settle(t, l)
	}
	return l, h
}

// Service creates a LoadBalancer Service name in the suite's namespace,
// asking for pool, with pods on nodes (mutate, when set, edits it
// first); it waits for its addresses and returns them sorted (IPv4
// first). The Service is deleted at the end of the test.
func (s *Suite) Service(t testing.TB, name, pool string, mutate func(*corev1.Service), nodes ...string) (*corev1.Service, []netip.Addr) {
	t.Helper()
	if s.h == nil {
		t.Fatal("harness: Service before Herald")
	}
	ctx := context.Background()
	svc := lab.LoadBalancerService(s.Namespace, name)
	svc.Annotations = map[string]string{v1beta1.AnnotationAddressPool: pool}
	if mutate != nil {
		mutate(svc)
	}
	t.Cleanup(func() { _ = s.h.Lab.DeleteService(context.Background(), s.Namespace, name) })
	created, ips, err := s.h.CreateService(ctx, svc, nodes...)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(ips, func(a, b netip.Addr) int { return a.Compare(b) })
	return created, ips
}

// ownerTimeout bounds Owner and Nobody.
const ownerTimeout = 30 * time.Second

// Owner waits until exactly one node answers for vip and returns it.
func Owner(t testing.TB, l *lab.Lab, vip netip.Addr) string {
	t.Helper()
	var node string
	labkit.Eventually(t, ownerTimeout, fmt.Sprintf("exactly one node answering for %s", vip), func() bool {
		answers := Probe(t, l, vip)
		if len(answers) == 1 {
			node = answers[0].Node
		}
		return len(answers) == 1
	})
	return node
}

// Nobody waits until no node answers for vip.
func Nobody(t testing.TB, l *lab.Lab, vip netip.Addr) {
	t.Helper()
	labkit.Eventually(t, ownerTimeout, fmt.Sprintf("nobody answering for %s", vip), func() bool { return len(Probe(t, l, vip)) == 0 })
}

// Probe sends one ARP who-has (IPv4) or multicast neighbour solicitation
// (IPv6) from the client and returns the answers.
func Probe(t testing.TB, l *lab.Lab, vip netip.Addr) []lab.Answer {
	t.Helper()
	var answers []lab.Answer
	var err error
	if vip.Is4() {
		answers, err = l.ARPProbe(context.Background(), vip)
	} else {
		answers, err = l.NDPProbe(context.Background(), vip, false)
	}
	if err != nil {
		t.Fatal(err)
	}
	return answers
}

// PinnedBackend runs one backend pod of app (label app=app, the lab's
// backend ports) on node in the suite's namespace, as a Deployment of its
// own, so that a test places each Service's pods node by node; remove
// deletes it (also at the test's end).
func (s *Suite) PinnedBackend(t testing.TB, l *lab.Lab, app, node string) (remove func()) {
	t.Helper()
	d := lab.MovableBackend(s.Namespace, app)
	d.Name = app + "-" + node
	d.Labels = map[string]string{"app": app}
	sel := map[string]string{"app": app, "pinned-node": node}
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
	d.Spec.Template.Labels = sel
	d.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	deployments := l.Client().AppsV1().Deployments(s.Namespace)
	if _, err := deployments.Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	remove = func() { _ = deployments.Delete(context.Background(), d.Name, metav1.DeleteOptions{}) }
	t.Cleanup(remove)
	return remove
}
