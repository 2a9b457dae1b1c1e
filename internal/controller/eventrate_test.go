package controller_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestEventWritesBounded: the controller binary writes Events at most at
// --event-qps after a burst of --event-burst, on a client of their own,
// so that 60 new Services (two Events each) are all assigned while their
// Events are still trickling out. Events are seen through a watch, after
// they were created, and the controller's rate limiter starts after
// start, so the n-th Event seen by start+t bounds the Events created by
// then: n ≤ burst + qps·t must hold for every Event seen.
func TestEventWritesBounded(t *testing.T) {
	const (
		services = 60
		qps      = 2.0
		burst    = 5
	)
	e := newEnv(t)
	e.pool("bench", nil, "2001:db8:e1::/120") // ipv6Only asks for pool bench
	e.createMany(services, func(i int) string { return fmt.Sprintf("svc-%02d", i) }, ipv6Only)
	seen := e.watchHeraldEvents()
	addresses := e.watchFirstAddress()

	start := time.Now()
	e.startBinary("controller", "--leader-elect=false", fmt.Sprintf("--event-qps=%g", qps), fmt.Sprintf("--event-burst=%d", burst))
	addresses.waitAll(e, services, 60*time.Second)
	whenAssigned := len(seen.times())
	// Four seconds' worth after the burst: the limiter lets Events through
	// at its rate, and without it the 120 would all be out by now.
	want := burst + int(4*qps)
	e.eventually(fmt.Sprintf("%d Events", want), 60*time.Second, func() bool { return len(seen.times()) >= want })

	if whenAssigned >= 2*services {
		t.Errorf("all %d Services were assigned only once all %d of their Events were written", services, whenAssigned)
	}
	for i, at := range seen.times() {
		allowed := burst + qps*at.Sub(start).Seconds()
		if float64(i+1) > allowed+1 { // one for rounding
			t.Errorf("Event %d seen %s after the controller started: at most %.1f allowed by --event-qps=%g --event-burst=%d",
				i+1, at.Sub(start).Round(time.Millisecond), allowed, qps, burst)
		}
	}
	t.Logf("%d Events when all %d Services had their address; %d seen in all", whenAssigned, services, len(seen.times()))
}

// heraldEvents records when each Event of the controller's was first seen.
type heraldEvents struct {
	mu   sync.Mutex
	seen []time.Time
}

func (h *heraldEvents) times() []time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Time(nil), h.seen...)
}

// watchHeraldEvents watches the test namespace's Events from now on and
// records the arrival of each new one the controller reported.
func (e *env) watchHeraldEvents() *heraldEvents {
	e.t.Helper()
	l, err := e.kube.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	w, err := e.kube.CoreV1().Events(e.ns).Watch(e.ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
	if err != nil {
		e.t.Fatal(err)
	}
	h := &heraldEvents{}
	go func() {
		for ev := range w.ResultChan() {
			if o, ok := ev.Object.(*corev1.Event); ok && ev.Type == watch.Added && o.Source.Component == "herald-controller" {
				h.mu.Lock()
				h.seen = append(h.seen, time.Now())
				h.mu.Unlock()
			}
		}
	}()
	e.t.Cleanup(w.Stop)
	return h
}
