package controller_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-lb/herald/api/generated/clientset/versioned"
	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/controller"
	"github.com/herald-lb/herald/internal/k8s"
	"github.com/herald-lb/herald/internal/k8s/clientset"
	"github.com/herald-lb/herald/internal/service"
	"github.com/herald-lb/herald/test/testenv"
)

// The controller binary starts its informers with LIST then WATCH
// (k8s.ListThenWatch); so do the controllers these tests run in process.
func TestMain(m *testing.M) {
	k8s.ListThenWatch()
	testenv.Main(m)
}

const heraldNS = "herald-system"

// minWait is the shortest wait for an eventual state (eventually, a
// replica exiting). make test runs these tests beside the end-to-end lab,
// whose cgroups outweigh them 256 to 1: while the L2 suite saturates a
// node's CPU (20 s), the test's API server and controllers get almost
// nothing: a leader resumed after a pause can need 13 s to see its
// renewal fail, longer than such a saturation leaves a shorter wait. A wait longer than the saturation keeps each test's meaning
// (the state is reached) on a busy machine, and costs time only when a
// test fails. No test here bounds a duration with it.
const minWait = 60 * time.Second

// env is one test's view of the shared API server: clients, a namespace of
// its own, and cleanup of every Herald object when the test ends.
type env struct {
	t      testing.TB
	ctx    context.Context
	kube   kubernetes.Interface
	herald versioned.Interface
	ns     string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	cp := testenv.Shared(t)
	kube := kubernetes.NewForConfigOrDie(cp.AdminConfig)
	herald := versioned.NewForConfigOrDie(cp.AdminConfig)
	ctx, cancel := context.WithCancel(context.Background())
	e := &env{t: t, ctx: ctx, kube: kube, herald: herald, ns: strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))}
	if len(e.ns) > 50 {
		e.ns = e.ns[:50]
	}
	e.ns = strings.Trim(e.ns, "-")
	e.wipe()
	for _, ns := range []string{e.ns, heraldNS} {
		_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { e.wipe(); cancel() })
	return e
}

// wipe deletes every Service, EndpointSlice and Event of the test
// namespace and every Herald object, removing the pool finalizer so
// nothing lingers between tests. The test API server has no garbage
// collector to delete a Service's EndpointSlices with it: left behind, the
// 10,000 of one benchmark were in the caches of the next benchmark's
// controller (its RSS 165 MiB instead of 132 MiB).
func (e *env) wipe() {
	ctx := context.Background()
	_ = e.kube.DiscoveryV1().EndpointSlices(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	_ = e.kube.CoreV1().Events(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	svcs, _ := e.kube.CoreV1().Services(e.ns).List(ctx, metav1.ListOptions{})
	if svcs != nil {
		names := make(chan string)
		var wg sync.WaitGroup
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := range names {
					_ = e.kube.CoreV1().Services(e.ns).Delete(ctx, n, metav1.DeleteOptions{})
				}
			}()
		}
		for _, s := range svcs.Items {
			names <- s.Name
		}
		close(names)
		wg.Wait()
	}
	h := e.herald.HeraldV1beta1()
	pools, _ := h.IPAddressPools().List(ctx, metav1.ListOptions{})
	if pools != nil {
		for _, p := range pools.Items {
			p.Finalizers = nil
			_, _ = h.IPAddressPools().Update(ctx, &p, metav1.UpdateOptions{})
			_ = h.IPAddressPools().Delete(ctx, p.Name, metav1.DeleteOptions{})
		}
	}
	_ = h.L2Advertisements().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	_ = h.BGPAdvertisements().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	_ = h.BGPPeers().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	_ = h.Communities().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	_ = h.BFDProfiles().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	e.eventually("objects deleted", 120*time.Second, func() bool {
		p, _ := h.IPAddressPools().List(ctx, metav1.ListOptions{})
		s, _ := e.kube.CoreV1().Services(e.ns).List(ctx, metav1.ListOptions{})
		es, _ := e.kube.DiscoveryV1().EndpointSlices(e.ns).List(ctx, metav1.ListOptions{Limit: 1})
		return p != nil && len(p.Items) == 0 && s != nil && len(s.Items) == 0 && es != nil && len(es.Items) == 0
	})
}

// startController runs a controller in this test process until the test
// ends (or stop is called).
func (e *env) startController(opts controller.Options) (stop func()) {
	e.t.Helper()
	cfg := testenv.Shared(e.t).AdminConfig
	scheme, err := clientset.NewScheme()
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	rec, stopEvents := k8s.NewRecorder(ctx, clientset.EventSink(e.kube), scheme, opts.Installation.Writer(controller.FieldManager))
	opts.Namespace = heraldNS
	opts.Recorder = rec
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	c, err := controller.New(kubernetes.NewForConfigOrDie(cfg), versioned.NewForConfigOrDie(cfg), opts)
	if err != nil {
		e.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.Run(ctx); err != nil {
			e.t.Errorf("controller: %v", err)
		}
	}()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-done
		stopEvents()
	}
	e.t.Cleanup(stop)
	return stop
}

func (e *env) eventually(what string, timeout time.Duration, ok func() bool) {
	e.t.Helper()
	e.eventuallyExplained(what, timeout, ok, nil)
}

// eventuallyExplained is eventually, and on timeout adds what explain
// says about the state it waited in.
func (e *env) eventuallyExplained(what string, timeout time.Duration, ok func() bool, explain func() string) {
	e.t.Helper()
	timeout = max(timeout, minWait)
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return ok(), nil
	})
	if err == nil {
		return
	}
	why := ""
	if explain != nil {
		why = "\n" + explain()
	}
	e.t.Fatalf("timed out after %s waiting for %s%s", timeout, what, why)
}

func (e *env) pool(name string, mutate func(*v1beta1.IPAddressPoolSpec), addrs ...string) *v1beta1.IPAddressPool {
	e.t.Helper()
	p := &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1beta1.IPAddressPoolSpec{Addresses: addrs}}
	if mutate != nil {
		mutate(&p.Spec)
	}
	got, err := e.herald.HeraldV1beta1().IPAddressPools().Create(e.ctx, p, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

func (e *env) updatePool(name string, mutate func(*v1beta1.IPAddressPool)) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := e.herald.HeraldV1beta1().IPAddressPools().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		mutate(p)
		_, err = e.herald.HeraldV1beta1().IPAddressPools().Update(ctx, p, metav1.UpdateOptions{})
		return err == nil, nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// waitPoolObserved waits until the running controller has taken in the
// pool's current spec (its status's observedGeneration), so that what
// the test does next sees the new version.
func (e *env) waitPoolObserved(name string) {
	e.t.Helper()
	var gen, observed int64
	err := wait.PollUntilContextTimeout(e.ctx, 20*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := e.herald.HeraldV1beta1().IPAddressPools().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		gen, observed = p.Generation, p.Status.ObservedGeneration
		return observed == gen, nil
	})
	if err != nil {
		e.t.Fatalf("pool %s: the controller observed generation %d, want %d: %v", name, observed, gen, err)
	}
}

// svc creates a LoadBalancer Service with one TCP port.
func (e *env) svc(name string, mutate func(*corev1.Service)) *corev1.Service {
	e.t.Helper()
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Annotations: map[string]string{}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}},
	}
	if mutate != nil {
		mutate(s)
	}
	got, err := e.kube.CoreV1().Services(e.ns).Create(e.ctx, s, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

func (e *env) updateSvc(name string, mutate func(*corev1.Service)) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		s, err := e.kube.CoreV1().Services(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		mutate(s)
		_, err = e.kube.CoreV1().Services(e.ns).Update(ctx, s, metav1.UpdateOptions{})
		return err == nil, nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) deleteSvc(name string) {
	e.t.Helper()
	if err := e.kube.CoreV1().Services(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) get(name string) *corev1.Service {
	e.t.Helper()
	s, err := e.kube.CoreV1().Services(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func ips(s *corev1.Service) []string {
	var out []string
	for _, ip := range service.IngressIPs(s) {
		out = append(out, ip.String())
	}
	return out
}

// waitIPs waits until the Service's ingress is exactly want, and checks
// ipMode VIP.
func (e *env) waitIPs(name string, want ...string) *corev1.Service {
	e.t.Helper()
	var s *corev1.Service
	e.eventually(fmt.Sprintf("Service %s to get %v", name, want), 20*time.Second, func() bool {
		s = e.get(name)
		return slices.Equal(ips(s), want)
	})
	for _, in := range s.Status.LoadBalancer.Ingress {
		if in.IPMode == nil || *in.IPMode != corev1.LoadBalancerIPModeVIP {
			e.t.Errorf("Service %s ingress %s ipMode = %v, want VIP", name, in.IP, in.IPMode)
		}
	}
	return s
}

// waitAnyIPs waits until the Service has n addresses and returns them.
func (e *env) waitAnyIPs(name string, n int) []string {
	e.t.Helper()
	var got []string
	e.eventually(fmt.Sprintf("Service %s to get %d address(es)", name, n), 20*time.Second, func() bool {
		got = ips(e.get(name))
		return len(got) == n
	})
	return got
}

// waitCondition waits for a Service condition with the status and reason.
func (e *env) waitCondition(name, typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	e.t.Helper()
	var c metav1.Condition
	e.eventuallyExplained(fmt.Sprintf("Service %s condition %s=%s/%s", name, typ, status, reason), 20*time.Second, func() bool {
		for _, cc := range e.get(name).Status.Conditions {
			if cc.Type == typ && cc.Status == status && cc.Reason == reason {
				c = cc
				return true
			}
		}
		return false
	}, func() string { return e.describeAnnouncing(name) })
	return c
}

// describeAnnouncing says what a test waiting on a Service's conditions
// needs when it times out: the Service's ingress and conditions, every
// SpeakerStatus and every speaker liveness Lease.
func (e *env) describeAnnouncing(name string) string {
	var b strings.Builder
	svc, err := e.kube.CoreV1().Services(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		fmt.Fprintf(&b, "Service %s: %v\n", name, err)
	} else {
		var ingress []string
		for _, in := range svc.Status.LoadBalancer.Ingress {
			ingress = append(ingress, in.IP)
		}
		fmt.Fprintf(&b, "Service %s (resourceVersion %s): ingress %v\n", name, svc.ResourceVersion, ingress)
		for _, c := range svc.Status.Conditions {
			fmt.Fprintf(&b, "  condition %s=%s %s at %s: %s\n", c.Type, c.Status, c.Reason, c.LastTransitionTime.Format(time.StampMilli), c.Message)
		}
	}
	if sts, err := e.herald.HeraldV1beta1().SpeakerStatuses().List(context.Background(), metav1.ListOptions{}); err == nil {
		for _, s := range sts.Items {
			fmt.Fprintf(&b, "SpeakerStatus %s: l2 %v, bgp %v\n", s.Name, s.Status.L2, s.Status.BGP)
		}
	}
	if ls, err := e.kube.CoordinationV1().Leases(heraldNS).List(context.Background(), metav1.ListOptions{}); err == nil {
		for _, l := range ls.Items {
			renew := "never"
			if l.Spec.RenewTime != nil {
				renew = l.Spec.RenewTime.Format(time.StampMilli)
			}
			fmt.Fprintf(&b, "Lease %s: renewed %s (now %s)\n", l.Name, renew, time.Now().Format(time.StampMilli))
		}
	}
	return b.String()
}

// waitEvent waits for an event on an object with the reason, whose message
// contains every fragment.
func (e *env) waitEvent(ns, name, reason string, fragments ...string) corev1.Event {
	e.t.Helper()
	var found corev1.Event
	e.eventually(fmt.Sprintf("event %s on %s/%s", reason, ns, name), 20*time.Second, func() bool {
		evs, err := e.kube.CoreV1().Events(ns).List(e.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false
		}
		for _, ev := range evs.Items {
			if ev.Reason != reason {
				continue
			}
			all := true
			for _, f := range fragments {
				all = all && strings.Contains(ev.Message, f)
			}
			if all {
				found = ev
				return true
			}
		}
		return false
	})
	return found
}

// eventReasons are the reasons of the Events the controller recorded on
// the object ns/name, sorted.
func (e *env) eventReasons(ns, name string) []string {
	evs, _ := e.kube.CoreV1().Events(ns).List(e.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	var out []string
	if evs != nil {
		for _, ev := range evs.Items {
			// Herald's only: the API server's own repair loop records
			// ClusterIPNotAllocated on a Service it saw before its
			// ClusterIP's allocation (seen once, on a busy machine).
			if ev.Source.Component == "herald-controller" {
				out = append(out, ev.Reason)
			}
		}
	}
	sort.Strings(out)
	return out
}

// settle waits until a sentinel Service created now has an address: every
// event queued before it has been handled by then.
func (e *env) settle(sentinelPool string) {
	e.t.Helper()
	e.settleTending(sentinelPool, func() {})
}

// settleTending is settle, calling tend at every poll: tests that run
// controller binaries start again there a replica that exited (one that
// lost its Lease, as its Deployment would), without which a starved
// follower's loss leaves no replica to serve the sentinel.
func (e *env) settleTending(sentinelPool string, tend func()) {
	e.t.Helper()
	name := fmt.Sprintf("sentinel-%d", time.Now().UnixNano()%1e6)
	e.svc(name, func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationAddressPool] = sentinelPool })
	e.eventually(fmt.Sprintf("Service %s to get an address", name), 60*time.Second, func() bool {
		tend()
		return len(ips(e.get(name))) == 1
	})
	e.deleteSvc(name)
}

func ptr[T any](v T) *T { return &v }

func stringsContains(s, sub string) bool { return strings.Contains(s, sub) }
