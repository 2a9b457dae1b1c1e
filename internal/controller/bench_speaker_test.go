package controller_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/test/labkit"
	"github.com/herald-lb/herald/test/testenv"
)

// BenchmarkSpeakerWith10000Services measures the speaker binary's memory
// and idle CPU in a cluster of 3 nodes with 10,000 LoadBalancer Services
// holding addresses, each with an EndpointSlice (one ready endpoint), as
// a real cluster's speaker caches them. The speaker runs for node n1 with
// the member list off; the other nodes have no speaker, so n1 owns every
// address (the worst case: a 3-node cluster's speaker owns a third). Its
// L2Advertisement names an interface that does not exist, so nothing is
// sent on this machine's network: the speaker decides and tracks all
// 10,000 addresses and announces them on no link. It reports, once the
// speaker (GOGC=50, as the manifests run it) is Ready and quiet:
//
//   - rss-MiB, anon-MiB: resident memory, and its anonymous part
//     (the rest is the mapped binary);
//
//   - idle-cpu-%: CPU over 10 s, as a share of one core;
//
//   - ready-s: process start to /readyz 200 (caches synced, decision
//     applied).
//
//     go test -run '^$' -bench SpeakerWith10000Services -benchtime 1x -timeout 60m ./internal/controller/
//
// $HERALD_BENCH_HEAP_PROFILE names a file for the speaker's heap profile;
// $HERALD_BENCH_SERVICES changes the number of Services.
func BenchmarkSpeakerWith10000Services(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("HERALD_BENCH_SERVICES")); err == nil && v > 0 {
		n = v // a quick check of the benchmark itself
	}
	for range b.N {
		e := newEnv(b)
		e.nodes("n1", "n2", "n3")
		e.pool("bench", nil, "2001:db8:f::/112")
		if _, err := e.herald.HeraldV1beta1().L2Advertisements().Create(e.ctx, &v1beta1.L2Advertisement{
			ObjectMeta: metav1.ObjectMeta{Name: "bench"},
			Spec:       v1beta1.L2AdvertisementSpec{IPAddressPools: []string{"bench"}, Interfaces: []string{"heraldnone0"}},
		}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		e.createMany(n, func(i int) string { return fmt.Sprintf("svc-%05d", i) }, ipv6Only)
		e.createSlices(n)
		w := e.watchFirstAddress()
		e.startBinary("controller", "--leader-elect=false")
		w.waitAll(e, n, 20*time.Minute)

		healthPort, metricsPort := testenv.FreePorts2()
		health, metrics := fmt.Sprintf("127.0.0.1:%d", healthPort), fmt.Sprintf("127.0.0.1:%d", metricsPort)
		b.Setenv("GOGC", "50") // as the manifests run it
		start := time.Now()
		proc := e.startSpeaker("n1", "--memberlist=false", "--health-addr="+health, "--metrics-addr="+metrics, "--profiling")
		ready := waitReady(b, "http://"+health+"/readyz", 10*time.Minute)
		cpuOf := func() time.Duration { m, _ := testenv.ProcessMemory(proc.PID()); return m.CPU }
		quiet(b, cpuOf)
		idle := cpuOver(cpuOf, 10*time.Second, nil)
		mem, err := testenv.ProcessMemory(proc.PID())
		if err != nil {
			b.Fatal(err)
		}
		if path := os.Getenv("HERALD_BENCH_HEAP_PROFILE"); path != "" {
			saveURL(b, "http://"+metrics+"/debug/pprof/heap", path)
		}
		b.ReportMetric(float64(mem.RSS)/(1<<20), "rss-MiB")
		b.ReportMetric(float64(mem.Anon)/(1<<20), "anon-MiB")
		b.ReportMetric(100*idle.Seconds()/10, "idle-cpu-%")
		b.ReportMetric(ready.Sub(start).Seconds(), "ready-s")
		b.Logf("speaker of n1 with %d Services and EndpointSlices, owning every address: Ready %v after start; idle %v CPU in 10 s; %s",
			n, ready.Sub(start).Round(time.Millisecond), idle, mem)
	}
}

// createSlices creates an EndpointSlice (benchSlice) for each of the
// Services svc-00000 ... in parallel.
func (e *env) createSlices(n int) {
	e.t.Helper()
	e.inParallel(n, func(i int) error {
		_, err := e.kube.DiscoveryV1().EndpointSlices(e.ns).Create(e.ctx, benchSlice(e.ns, i), metav1.CreateOptions{})
		return err
	})
}

// saveURL writes what url serves to path (a profile, for pprof).
func saveURL(t testing.TB, url, path string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s saved in %s", url, path)
}

// startSpeaker runs the speaker binary for node with the admin
// kubeconfig (metrics off unless args set --metrics-addr); it is stopped
// (by PID) when the test ends.
func (e *env) startSpeaker(node string, args ...string) *labkit.Process {
	e.t.Helper()
	cp := testenv.Shared(e.t)
	all := append([]string{"--kubeconfig=" + cp.AdminKubeconfig, "--namespace=" + heraldNS, "--node-name=" + node,
		"--pod-name=bench-speaker", "--metrics-addr=", "--log-level=info"}, args...)
	return e.runBinary(speakerBuild, "speaker-"+node, 15*time.Second, all...)
}

// waitReady polls url until it answers 200 and returns when it did.
func waitReady(t testing.TB, url string, timeout time.Duration) time.Time {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Now()
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s not 200 within %v", url, timeout)
	return time.Time{}
}
