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
	"github.com/herald-lb/herald/test/labkit"
	"github.com/herald-lb/herald/test/testenv"
)

// buildBinary returns a function that builds ./<pkg> (a Herald binary)
// once per test process and returns its path.
func buildBinary(pkg string) func() (string, error) {
	return sync.OnceValues(func() (string, error) {
		dir, err := os.MkdirTemp("", "herald-"+pkg+"-bin-")
		if err != nil {
			return "", err
		}
		out := filepath.Join(dir, pkg)
		return out, testenv.GoBuild(context.Background(), out, "./"+pkg)
	})
}

var (
	buildOnce    = buildBinary("controller")
	speakerBuild = buildBinary("speaker")
)

// startBinary runs the controller binary with the admin kubeconfig; it is
// stopped (by PID) when the test ends.
func (e *env) startBinary(name string, args ...string) *labkit.Process {
	e.t.Helper()
	cp := testenv.Shared(e.t)
	all := append([]string{"--kubeconfig=" + cp.AdminKubeconfig, "--namespace=" + heraldNS,
		"--metrics-addr=", "--health-addr=", "--log-level=info", "--identity=" + name}, args...)
	return e.runBinary(buildOnce, name, 5*time.Second, all...)
}

// runBinary starts what build built as process name, logging to a file of
// the test's; it is stopped (by PID, SIGTERM then, after stop, SIGKILL)
// when the test ends, and its log's tail printed when the test failed.
func (e *env) runBinary(build func() (string, error), name string, stop time.Duration, args ...string) *labkit.Process {
	e.t.Helper()
	bin, err := build()
	if err != nil {
		e.t.Fatal(err)
	}
	p, err := labkit.Spawn(labkit.ProcessOptions{Name: name, LogPath: filepath.Join(e.t.TempDir(), name+".log"),
		Argv: append([]string{bin}, args...), Grace: stop})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = p.Stop()
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
	e.inParallel(n, func(i int) error {
		s := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name(i), Namespace: e.ns, Annotations: map[string]string{}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, AllocateLoadBalancerNodePorts: ptr(false),
				Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}},
		}
		if mutate != nil {
			mutate(i, s)
		}
		_, err := e.kube.CoreV1().Services(e.ns).Create(context.Background(), s, metav1.CreateOptions{})
		return err
	})
}

// inParallel runs do(0) ... do(n-1) on 16 goroutines (as many API
// requests in flight) and fails the test on the first error.
func (e *env) inParallel(n int, do func(i int) error) {
	e.t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	work := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := do(i); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range n {
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
	e.eventually("every Service to have its addresses", timeout, func() bool { return e.allAssigned(want) })
}

// allAssigned reports whether every Service of the namespace has as many
// addresses as want says.
func (e *env) allAssigned(want func(name string) int) bool {
	addrs, _ := e.snapshot()
	for name, a := range addrs {
		if len(a) != want(name) {
			return false
		}
	}
	return true
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
