package controller_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/herald-lb/herald/test/labkit"
)

// addressWatch records every address each Service's status ever showed.
type addressWatch struct {
	mu   sync.Mutex
	seen map[string]map[string]bool
}

func (e *env) watchAddresses() *addressWatch {
	e.t.Helper()
	w, err := e.kube.CoreV1().Services(e.ns).Watch(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	aw := &addressWatch{seen: map[string]map[string]bool{}}
	go func() {
		for ev := range w.ResultChan() {
			s, ok := ev.Object.(*corev1.Service)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			aw.mu.Lock()
			for _, ip := range ips(s) {
				if aw.seen[s.Name] == nil {
					aw.seen[s.Name] = map[string]bool{}
				}
				aw.seen[s.Name][ip] = true
			}
			aw.mu.Unlock()
		}
	}()
	e.t.Cleanup(w.Stop)
	return aw
}

func (aw *addressWatch) moved() []string {
	aw.mu.Lock()
	defer aw.mu.Unlock()
	var out []string
	for name, ips := range aw.seen {
		if len(ips) > 1 {
			out = append(out, fmt.Sprintf("%s: %v", name, ips))
		}
	}
	return out
}

func (e *env) leaseHolder() string {
	l, err := e.kube.CoordinationV1().Leases(heraldNS).Get(context.Background(), "herald-controller", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func TestLeaderElectionFailover(t *testing.T) {
	e := newEnv(t)
	_ = e.kube.CoordinationV1().Leases(heraldNS).Delete(e.ctx, "herald-controller", metav1.DeleteOptions{})
	e.pool("p", nil, "198.51.100.0/25")
	aw := e.watchAddresses()
	leaseArgs := []string{"--leader-elect=true", "--lease-duration=3s", "--renew-deadline=2s", "--retry-period=500ms"}
	procs := map[string]*labkit.Process{
		"replica-a": e.startBinary("replica-a", leaseArgs...),
		"replica-b": e.startBinary("replica-b", leaseArgs...),
	}
	// A replica that loses its Lease exits, for its Deployment to start a
	// fresh process; the kubelet's part is played here. On a busy machine
	// (a CI running labs beside this test) a starved leader cannot renew
	// within the renew deadline, and without the restart the follower's
	// own loss would leave no replica at all.
	killed := ""
	restartLosers := func() {
		for name, p := range procs {
			if name == killed || !p.Exited() {
				continue
			}
			if !strings.Contains(p.Tail(5), "lost leadership") {
				t.Fatalf("%s exited without losing its Lease: %v", name, p.Err())
			}
			t.Logf("%s lost its Lease (a starved renewal) and exited; started again, as its Deployment would", name)
			procs[name] = e.startBinary(name, leaseArgs...)
		}
	}
	allAssigned := func() {
		e.eventually("every Service to have its addresses", 60*time.Second, func() bool {
			restartLosers()
			return e.allAssigned(func(string) int { return 1 })
		})
	}
	name := func(i int) string { return fmt.Sprintf("before-%02d", i) }
	e.createMany(20, name, nil)
	allAssigned()
	leader := e.leaseHolder()
	if procs[leader] == nil {
		t.Fatalf("lease holder %q is not one of the replicas", leader)
	}
	killedAt := time.Now()
	killed = leader
	procs[leader].Kill()
	e.createMany(10, func(i int) string { return fmt.Sprintf("after-%02d", i) }, nil)
	allAssigned()
	t.Logf("the follower served new Services %s after the leader was killed (lease duration 3s)", time.Since(killedAt).Round(time.Millisecond))
	if holder := e.leaseHolder(); holder == leader || procs[holder] == nil {
		t.Errorf("lease holder after failover = %q", holder)
	}
	// a follower starved by a lab saturating the CPU beside this test
	// can lose its Lease just after taking over (seen in CI): settling
	// needs the restart too
	e.settleTending("p", restartLosers)
	if moved := aw.moved(); len(moved) > 0 {
		t.Errorf("Services shown with more than one address across the failover: %v", moved)
	}
}
