package controller_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/testenv"
)

// binaryPath builds the controller binary once per test process.
var buildOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "herald-controller-bin-")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "controller")
	return out, testenv.GoBuild(context.Background(), out, "./controller")
})

// startBinary runs the controller binary with the admin kubeconfig; it is
// stopped (by PID) when the test ends.
func (e *env) startBinary(name string, args ...string) *testenv.Process {
	e.t.Helper()
	bin, err := buildOnce()
	if err != nil {
		e.t.Fatal(err)
	}
	cp := testenv.Shared(e.t)
	all := append([]string{"--kubeconfig=" + cp.AdminKubeconfig, "--namespace=" + heraldNS,
		"--metrics-addr=", "--health-addr=", "--log-level=info", "--identity=" + name}, args...)
	p, err := testenv.StartProcess(name, filepath.Join(e.t.TempDir(), name+".log"), bin, all...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		p.Stop(5 * time.Second)
		if e.t.Failed() {
			e.t.Logf("%s log tail:\n%s", name, p.Tail(40))
		}
	})
	return p
}

// createMany creates n Services in parallel; name(i) and mutate(i) shape
// each one.
func (e *env) createMany(n int, name func(int) string, mutate func(int, *corev1.Service)) {
	e.t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	work := make(chan int)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				s := &corev1.Service{
					ObjectMeta: metav1.ObjectMeta{Name: name(i), Namespace: e.ns, Annotations: map[string]string{}},
					Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, AllocateLoadBalancerNodePorts: ptr(false),
						Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}},
				}
				if mutate != nil {
					mutate(i, s)
				}
				if _, err := e.kube.CoreV1().Services(e.ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		e.t.Fatal(err)
	}
}

// snapshot returns every Service's addresses and resourceVersion.
func (e *env) snapshot() (map[string][]string, map[string]string) {
	e.t.Helper()
	list, err := e.kube.CoreV1().Services(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	addrs, versions := map[string][]string{}, map[string]string{}
	for i := range list.Items {
		s := &list.Items[i]
		addrs[s.Name], versions[s.Name] = ips(s), s.ResourceVersion
	}
	return addrs, versions
}

// waitAllAssigned waits until every Service of the namespace has want
// addresses.
func (e *env) waitAllAssigned(timeout time.Duration, want func(name string) int) {
	e.t.Helper()
	e.eventually("every Service to have its addresses", timeout, func() bool {
		addrs, _ := e.snapshot()
		for name, a := range addrs {
			if len(a) != want(name) {
				return false
			}
		}
		return true
	})
}

// waitAllAnnotated waits until every Service of the namespace carries the
// herald.dev/ip-allocated-from-pool annotation.
func (e *env) waitAllAnnotated(timeout time.Duration) {
	e.t.Helper()
	e.eventually("every Service to carry its pool annotation", timeout, func() bool {
		list, err := e.kube.CoreV1().Services(e.ns).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, s := range list.Items {
			if s.Annotations[v1beta1.AnnotationAllocatedFromPool] == "" {
				return false
			}
		}
		return true
	})
}

// An argument error is printed before the binary exits with status 2.
func TestArgumentErrorIsPrinted(t *testing.T) {
	bin, err := buildOnce()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--namespace=x", "stray"}, "controller: unexpected arguments: [stray]"},
		{[]string{"--event-qps=0"}, "controller: --event-qps must be above 0 and --event-burst at least 1 (got 0 and 200)"},
	} {
		out, err := exec.Command(bin, tc.args...).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Fatalf("%v: exit = %v, want status 2", tc.args, err)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: output %q does not name the error (%q)", tc.args, out, tc.want)
		}
	}
}
