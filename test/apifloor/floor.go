// Package apifloor measures the API server's own write floor for
// LoadBalancer status: how long N status writes of pending LoadBalancer
// Services take with W concurrent writers over one client (client-go's
// persistent HTTP/2 connection, no client-side rate limit). Each write
// sets one ingress address with ipMode VIP and nothing else, with a
// strategic merge patch (as the Kubernetes service controller writes
// status), the cheapest write measured: a server-side apply of the same
// status (Options.Apply) costs the API server about a quarter more CPU,
// since it parses an apply body as YAML; a status update of the whole
// object (Options.Update), which the API server applies without merging,
// takes about 7 % less time than the patch (docs/benchmarks.md). It is
// what the controller's
// figures are compared with: a controller that uses W workers cannot hand
// out N addresses faster than this, on the same API server, in the same
// run.
//
// It never touches Services it did not create: it works in a namespace of
// its own, creates the Services (not timed), times the status writes, and
// deletes the Services again.
package apifloor

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	acorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// FieldManager is the server-side apply field manager of the writes.
const FieldManager = "herald-apifloor"

// Options say what to measure.
type Options struct {
	// Namespace to work in; created when missing, never deleted (a test
	// API server without kube-controller-manager cannot finish deleting a
	// namespace). Its Services are deleted at the end.
	Namespace string
	// Services is N, the number of status writes.
	Services int
	// Writers is W, the number of concurrent writers.
	Writers int
	// IPv6 makes the Services single-stack IPv6 (test API servers often
	// have few IPv4 cluster IPs); the ingress addresses come from
	// 2001:db8:fff::/48, else 198.51.100.0/24 (repeating: the API server
	// does not check uniqueness, and nothing is announced).
	IPv6 bool
	// Keep leaves the Services in place (to look at them).
	Keep bool
	// Apply writes with server-side apply instead of a patch.
	Apply bool
	// Update writes the whole Service back (PUT of the status
	// subresource, with the version it was created with) instead of a
	// patch.
	Update bool
	// Probe, when set, is called as the status writes start, and the
	// function it returns as they end (a benchmark reads the API server's
	// CPU time with it).
	Probe func() (end func())
}

// Result is one measurement.
type Result struct {
	Services, Writers int
	// Kind is "patches" or "applies".
	Kind string
	// Create is how long creating the Services took (not the floor).
	Create time.Duration
	// Write is the floor: all status writes, first request to last answer.
	Write time.Duration
}

// PerSecond is the write rate.
func (r Result) PerSecond() float64 { return float64(r.Services) / r.Write.Seconds() }

func (r Result) String() string {
	return fmt.Sprintf("API floor: %d status %s with %d writers in %s (%.0f/s)",
		r.Services, r.Kind, r.Writers, r.Write.Round(time.Millisecond), r.PerSecond())
}

// Measure runs one measurement with the client configuration cfg (copied;
// its rate limit is lifted so that only the API server and W bound it).
func Measure(ctx context.Context, cfg *rest.Config, o Options) (Result, error) {
	if o.Services <= 0 || o.Writers <= 0 || o.Namespace == "" {
		return Result{}, fmt.Errorf("floor: need Services > 0, Writers > 0 and a Namespace (got %d, %d, %q)", o.Services, o.Writers, o.Namespace)
	}
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst, c.RateLimiter = 1e6, 1e6, nil
	c.UserAgent = FieldManager
	kube, err := kubernetes.NewForConfig(c)
	if err != nil {
		return Result{}, fmt.Errorf("floor: client: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return Result{}, fmt.Errorf("floor: namespace %s: %w", o.Namespace, err)
	}
	res := Result{Services: o.Services, Writers: o.Writers, Kind: "patches"}
	switch {
	case o.Apply:
		res.Kind = "applies"
	case o.Update:
		res.Kind = "updates"
	}
	names := make([]string, o.Services)
	for i := range names {
		names[i] = fmt.Sprintf("floor-%05d", i)
	}
	created := make([]*corev1.Service, o.Services)
	start := time.Now()
	err = parallel(ctx, o.Writers, o.Services, func(ctx context.Context, i int) error {
		s, err := kube.CoreV1().Services(o.Namespace).Create(ctx, pendingService(o, names[i]), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			s, err = kube.CoreV1().Services(o.Namespace).Get(ctx, names[i], metav1.GetOptions{})
		}
		created[i] = s
		return err
	})
	res.Create = time.Since(start)
	if !o.Keep {
		defer deleteAll(kube, o, names)
	}
	if err != nil {
		return res, fmt.Errorf("floor: creating Services: %w", err)
	}
	end := func() {}
	if o.Probe != nil {
		end = o.Probe()
	}
	start = time.Now()
	err = parallel(ctx, o.Writers, o.Services, func(ctx context.Context, i int) error {
		return writeStatus(ctx, kube, o, created[i], i)
	})
	res.Write = time.Since(start)
	end()
	if err != nil {
		return res, fmt.Errorf("floor: status writes: %w", err)
	}
	return res, nil
}

func pendingService(o Options, name string) *corev1.Service {
	no := false
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.Namespace},
		Spec: corev1.ServiceSpec{
			Type:                          corev1.ServiceTypeLoadBalancer,
			AllocateLoadBalancerNodePorts: &no,
			// another class: no load-balancer controller in the cluster
			// touches them
			LoadBalancerClass: ptr("apifloor.herald.dev/none"),
			Ports:             []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
		},
	}
	if o.IPv6 {
		p := corev1.IPFamilyPolicySingleStack
		s.Spec.IPFamilyPolicy, s.Spec.IPFamilies = &p, []corev1.IPFamily{corev1.IPv6Protocol}
	}
	return s
}

// writeStatus is the write a load-balancer controller makes: one ingress
// address with ipMode VIP.
func writeStatus(ctx context.Context, kube kubernetes.Interface, o Options, svc *corev1.Service, i int) error {
	name := svc.Name
	ip := netip.AddrFrom4([4]byte{198, 51, 100, byte(1 + i%254)})
	if o.IPv6 {
		ip = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0x0f, 0xff, 14: byte(i >> 8), 15: byte(i)})
	}
	services := kube.CoreV1().Services(o.Namespace)
	if o.Apply {
		lb := acorev1.LoadBalancerStatus().WithIngress(acorev1.LoadBalancerIngress().WithIP(ip.String()).WithIPMode(corev1.LoadBalancerIPModeVIP))
		_, err := services.ApplyStatus(ctx, acorev1.Service(name, o.Namespace).WithStatus(acorev1.ServiceStatus().WithLoadBalancer(lb)),
			metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
		return err
	}
	if o.Update {
		s := svc.DeepCopy()
		vip := corev1.LoadBalancerIPModeVIP
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip.String(), IPMode: &vip}}
		_, err := services.UpdateStatus(ctx, s, metav1.UpdateOptions{FieldManager: FieldManager})
		return err
	}
	body := fmt.Sprintf(`{"status":{"loadBalancer":{"ingress":[{"ip":%q,"ipMode":%q}]}}}`, ip, corev1.LoadBalancerIPModeVIP)
	_, err := services.Patch(ctx, name, types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{FieldManager: FieldManager}, "status")
	return err
}

func deleteAll(kube kubernetes.Interface, o Options, names []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_ = parallel(ctx, o.Writers, len(names), func(ctx context.Context, i int) error {
		err := kube.CoreV1().Services(o.Namespace).Delete(ctx, names[i], metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// parallel runs f(0..n-1) on w goroutines and returns the errors.
func parallel(ctx context.Context, w, n int, f func(context.Context, int) error) error {
	work := make(chan int)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range w {
		wg.Go(func() {
			for i := range work {
				if err := f(ctx, i); err != nil {
					mu.Lock()
					if len(errs) < 5 {
						errs = append(errs, err)
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	return errors.Join(errs...)
}

func ptr[T any](v T) *T { return &v }
