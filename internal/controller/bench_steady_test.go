package controller_test

import (
	"fmt"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-lb/herald/test/testenv"
)

// BenchmarkControllerSteady10000 measures the controller binary's CPU once
// 10,000 Services hold addresses: idle for 10 s, then while the test
// updates EndpointSlices of 100 of the Services at 100 a second for 30 s
// (an endpoint's readiness flipping, as rolling updates do). It reports
// the CPU used as a share of one core in each phase, the CPU per slice
// update and the RSS. The test's own client runs in this process, so it is
// not counted.
//
// Run it with: go test -run '^$' -bench ControllerSteady10000 -benchtime 1x -timeout 60m ./internal/controller/
func BenchmarkControllerSteady10000(b *testing.B) {
	const n, churned, rate, churn = 10000, 100, 100, 30 * time.Second
	for range b.N {
		e := newEnv(b)
		e.pool("bench", nil, "2001:db8:f::/112")
		e.createMany(n, func(i int) string { return fmt.Sprintf("svc-%05d", i) }, ipv6Only)
		w := e.watchFirstAddress()
		proc := e.startBinary("controller", append([]string{"--leader-elect=false"}, benchFlags()...)...)
		w.waitAll(e, n, 20*time.Minute)
		cpuOf := func() time.Duration { m, _ := testenv.ProcessMemory(proc.PID()); return m.CPU }
		quiet(b, cpuOf)
		idle := cpuOver(cpuOf, 10*time.Second, nil)
		cfg := *testenv.Shared(b).AdminConfig
		cfg.QPS, cfg.Burst = 500, 500
		kube := kubernetes.NewForConfigOrDie(&cfg)
		slices := make([]*discoveryv1.EndpointSlice, churned)
		for i := range slices {
			es, err := kube.DiscoveryV1().EndpointSlices(e.ns).Create(e.ctx, benchSlice(e.ns, i), metav1.CreateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			slices[i] = es
		}
		quiet(b, cpuOf)
		updates := 0
		busy := cpuOver(cpuOf, churn, func(deadline time.Time) {
			tick := time.NewTicker(time.Second / rate)
			defer tick.Stop()
			for time.Now().Before(deadline) {
				<-tick.C
				es := slices[updates%churned]
				ready := !*es.Endpoints[0].Conditions.Ready
				es.Endpoints[0].Conditions.Ready = &ready
				got, err := kube.DiscoveryV1().EndpointSlices(e.ns).Update(e.ctx, es, metav1.UpdateOptions{})
				if err != nil {
					b.Fatal(err)
				}
				slices[updates%churned] = got
				updates++
			}
		})
		mem, _ := testenv.ProcessMemory(proc.PID())
		b.ReportMetric(100*idle.Seconds()/10, "idle-cpu-%")
		b.ReportMetric(100*busy.Seconds()/churn.Seconds(), "churn-cpu-%")
		b.ReportMetric(float64(busy.Microseconds())/1000/float64(updates), "cpu-ms/update")
		b.ReportMetric(float64(mem.RSS)/(1<<20), "rss-MiB")
		b.Logf("controller with %d Services: idle %v CPU in 10 s; %d EndpointSlice updates in %v (%.0f/s) cost %v CPU (%.1f%% of a core, %.2f ms each); %s",
			n, idle, updates, churn, float64(updates)/churn.Seconds(), busy, 100*busy.Seconds()/churn.Seconds(),
			float64(busy.Microseconds())/1000/float64(updates), mem)
	}
}

// quiet waits until the process (the controller, the speaker) used under
// 5% of a core for 2 s.
func quiet(b *testing.B, cpuOf func() time.Duration) {
	deadline := time.Now().Add(5 * time.Minute)
	for cpuOver(cpuOf, 2*time.Second, nil) > 100*time.Millisecond {
		if time.Now().After(deadline) {
			b.Fatal("the process did not go quiet within 5 minutes")
		}
	}
}

// cpuOver is the CPU the process used during d, while work (if any) runs
// until the deadline.
func cpuOver(cpuOf func() time.Duration, d time.Duration, work func(deadline time.Time)) time.Duration {
	before := cpuOf()
	deadline := time.Now().Add(d)
	if work != nil {
		work(deadline)
	}
	time.Sleep(time.Until(deadline))
	return cpuOf() - before
}

// benchSlice is an EndpointSlice of Service svc-<i> with one ready endpoint.
func benchSlice(ns string, i int) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%05d-bench", i), Namespace: ns,
			Labels: map[string]string{discoveryv1.LabelServiceName: fmt.Sprintf("svc-%05d", i)}},
		AddressType: discoveryv1.AddressTypeIPv6,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{fmt.Sprintf("2001:db8:e::%x", i+1)}, NodeName: ptr("node1"),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}}},
	}
}
