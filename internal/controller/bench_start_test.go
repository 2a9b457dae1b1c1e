package controller_test

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/herald-lb/herald/test/apifloor"
	"github.com/herald-lb/herald/test/labkit"
	"github.com/herald-lb/herald/test/testenv"
)

// benchStart creates n pending Services, measures the API server's floor
// for n status writes with the controller's worker count, starts the
// controller binary and reports, besides report's figures:
//   - floor-s and x-floor: the floor and all-assigned-s divided by it;
//   - sync-ms: process start until the controller's caches synced (from
//     its "caches synced" log line);
//   - first-write-ms: caches synced until the first Service had its address
//     (the goal is 200 ms);
//   - first-decision-ms: caches synced until the controller decided the
//     first address (its first "assigned" log line, before the write): the
//     controller's own share of first-write-ms;
//   - first-status-ms: caches synced until the first status write returned
//     (its "first status written" log line); the rest of first-write-ms is
//     the watch delivering it to the test;
//   - writes-s: first address until the last;
//   - rss-MiB: the controller's resident memory once all are assigned;
//   - with floorAfter, floor-after-s, x-floor-after and x-floor-mean: the
//     floor measured again once all are assigned, and all-assigned-s
//     divided by it and by the mean of both floors, measured after the
//     controller stopped and its Services were deleted, so that the API
//     server holds as many Services as for the floor before (with the
//     controller's 1,000 still there, the floor after was 7-19 % slower in
//     three runs). The API server's cost of a write moves between moments
//     of one run; a floor on each side of the controller's run shows how
//     much.
func benchStart(b *testing.B, n int, pool string, floorAfter bool) {
	for i := 0; i < b.N; i++ {
		e := newEnv(b)
		e.pool("bench", nil, pool)
		if _, err := buildOnce(); err != nil {
			b.Fatal(err)
		}
		// The floor first, its Services deleted again before the
		// controller's are created: creating a Service costs the test
		// API server more the more exist (its ClusterIP allocation).
		var floorCPU cpuAccount
		probe := func() func() {
			c0 := readCPU(b)
			return func() { floorCPU = readCPU(b).since(c0) }
		}
		floorOpts := apifloor.Options{Namespace: "apifloor", Services: n, Writers: benchWorkers(), IPv6: true, Probe: probe}
		fl, err := apifloor.Measure(context.Background(), testenv.Shared(b).AdminConfig, floorOpts)
		if err != nil {
			b.Fatal(err)
		}
		e.createMany(n, func(i int) string { return fmt.Sprintf("svc-%05d", i) }, ipv6Only)
		w := e.watchFirstAddress()
		before, err := apiRequests(context.Background(), b)
		if err != nil {
			b.Fatal(err)
		}
		cpu0 := readCPU(b)
		start := time.Now()
		proc := e.startBinary("controller", append([]string{"--leader-elect=false"}, benchFlags()...)...)
		profiled := cpuProfile(b)
		w.waitAll(e, n, 300*time.Second)
		total := time.Since(start)
		profiled()
		runCPU := readCPU(b).since(cpu0)
		assigned, err := apiRequests(context.Background(), b)
		if err != nil {
			b.Fatal(err)
		}
		mem, _ := testenv.ProcessMemory(proc.PID())
		lat := w.latencies(func(string) time.Time { return start })
		report(b, lat, total, int(mem.HWM/1024))
		began, synced := logTime(proc.LogPath, "starting"), logTime(proc.LogPath, "caches synced")
		first, last := start.Add(lat[0]), start.Add(lat[len(lat)-1])
		b.ReportMetric(fl.Write.Seconds(), "floor-s")
		b.ReportMetric(total.Seconds()/fl.Write.Seconds(), "x-floor")
		b.ReportMetric(float64(synced.Sub(start).Milliseconds()), "sync-ms")
		b.ReportMetric(float64(first.Sub(synced).Milliseconds()), "first-write-ms")
		b.ReportMetric(float64(logTime(proc.LogPath, "assigned").Sub(synced).Milliseconds()), "first-decision-ms")
		b.ReportMetric(float64(logTime(proc.LogPath, "first status written").Sub(synced).Milliseconds()), "first-status-ms")
		b.ReportMetric(last.Sub(first).Seconds(), "writes-s")
		b.ReportMetric(float64(mem.RSS)/(1<<20), "rss-MiB")
		b.ReportMetric(msPer(floorCPU.server, n), "floor-server-cpu-ms/write")
		b.ReportMetric(msPer(runCPU.server, n), "server-cpu-ms/svc")
		b.ReportMetric(msPer(floorCPU.machine, n), "floor-machine-cpu-ms/write")
		b.ReportMetric(msPer(runCPU.machine, n), "machine-cpu-ms/svc")
		b.ReportMetric(float64(runCPU.machine)/float64(floorCPU.machine), "x-floor-machine-cpu")
		b.Logf("CPU a write, floor: %s; a Service, from controller start until all were assigned: %s, of which the controller %.2f ms (the server's share covers its initial list, status writes, Events, and the watches of the controller and of this test)",
			floorCPU.per(n), runCPU.per(n), msPer(mem.CPU, n))
		b.Logf("%s; controller (%d workers): all assigned %.1f× the floor; process start → informers starting %s → caches synced +%s → first address +%s → last address +%s; %s",
			fl, benchWorkers(), total.Seconds()/fl.Write.Seconds(), began.Sub(start).Round(time.Millisecond), synced.Sub(began).Round(time.Millisecond),
			first.Sub(synced).Round(time.Millisecond), last.Sub(first).Round(time.Millisecond), mem)
		b.Logf("API requests from controller start until all were assigned: %s", requestsDuring(before, assigned, n))
		if floorAfter {
			// the same state as the floor before: the controller stopped,
			// its Services gone, only the floor's own present
			_ = proc.Stop()
			e.wipe()
			floorOpts.Probe = nil
			after, err := apifloor.Measure(context.Background(), testenv.Shared(b).AdminConfig, floorOpts)
			if err != nil {
				b.Fatal(err)
			}
			mean := (fl.Write + after.Write) / 2
			b.ReportMetric(after.Write.Seconds(), "floor-after-s")
			b.ReportMetric(total.Seconds()/after.Write.Seconds(), "x-floor-after")
			b.ReportMetric(total.Seconds()/mean.Seconds(), "x-floor-mean")
			b.Logf("floor again, after: %s; all assigned %.2f× the floor before, %.2f× the floor after, %.2f× their mean",
				after, total.Seconds()/fl.Write.Seconds(), total.Seconds()/after.Write.Seconds(), total.Seconds()/mean.Seconds())
		}
		if lines := logLinesUntil(proc.LogPath, "first status written"); len(lines) > 0 {
			b.Logf("the controller's log until its first assignment:\n%s", strings.Join(lines, "\n"))
		}
	}
}

// cpuProfile, with $HERALD_BENCH_CPUPROFILE set to a file and
// HERALD_BENCH_FLAGS="--metrics-addr=127.0.0.1:<port> --profiling",
// fetches a CPU profile of the controller's first 2 seconds
// ($HERALD_BENCH_CPUPROFILE_SECONDS to change it; from /debug/pprof/profile,
// as soon as it answers) into that file; the
// returned function waits for it. Without them it does nothing.
func cpuProfile(tb testing.TB) (wait func()) {
	out := os.Getenv("HERALD_BENCH_CPUPROFILE")
	addr := ""
	for _, f := range benchFlags() {
		if v, ok := strings.CutPrefix(f, "--metrics-addr="); ok {
			addr = v
		}
	}
	if out == "" || addr == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		seconds := cmp.Or(os.Getenv("HERALD_BENCH_CPUPROFILE_SECONDS"), "2")
		url := "http://" + addr + "/debug/pprof/profile?seconds=" + seconds
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			resp, err := http.Get(url)
			if err != nil {
				continue
			}
			data, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				tb.Logf("CPU profile from %s: status %s, %v", url, resp.Status, err)
				return
			}
			if err := os.WriteFile(out, data, 0o644); err != nil {
				tb.Log(err)
			}
			tb.Logf("CPU profile of the controller's first %s s in %s", seconds, out)
			return
		}
		tb.Logf("CPU profile: %s never answered", url)
	}()
	return func() { <-done }
}

// cpuAccount is CPU time used on the machine, in all and by parts: with
// every core busy during the floor and the controller's run (as on the
// 2-core development machine), the ratio of their machine CPU per write is
// the ratio their times tend to, without the moment-to-moment speed of the
// API server that moves the times.
type cpuAccount struct {
	machine time.Duration // every process (testenv.MachineCPU)
	server  time.Duration // the shared API server and its etcd
	test    time.Duration // this test process: the floor's writers, the watcher
}

func readCPU(tb testing.TB) cpuAccount {
	machine, err := testenv.MachineCPU()
	if err != nil {
		tb.Fatal(err)
	}
	self, err := testenv.ProcessMemory(os.Getpid())
	if err != nil {
		tb.Fatal(err)
	}
	return cpuAccount{machine: machine, server: serverCPU(tb), test: self.CPU}
}

func (a cpuAccount) since(b cpuAccount) cpuAccount {
	return cpuAccount{machine: a.machine - b.machine, server: a.server - b.server, test: a.test - b.test}
}

// per formats the account per one of n writes or Services, in ms.
func (a cpuAccount) per(n int) string {
	return fmt.Sprintf("machine %.2f ms (API server and etcd %.2f, this test %.2f, the rest %.2f)",
		msPer(a.machine, n), msPer(a.server, n), msPer(a.test, n), msPer(a.machine-a.server-a.test, n))
}

// serverCPU is the CPU time the shared API server and its etcd have used:
// where the floor and the controller differ when both wait on them.
func serverCPU(tb testing.TB) time.Duration {
	cp := testenv.Shared(tb)
	var total time.Duration
	for _, p := range []*labkit.Process{cp.APIServer, cp.Etcd} {
		m, err := testenv.ProcessMemory(p.PID())
		if err != nil {
			tb.Fatalf("CPU of the control plane: %v", err)
		}
		total += m.CPU
	}
	return total
}

func msPer(d time.Duration, n int) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }

// benchWorkers is the controller's --workers: from $HERALD_BENCH_FLAGS,
// else its default.
func benchWorkers() int {
	for _, f := range benchFlags() {
		if v, ok := strings.CutPrefix(f, "--workers="); ok {
			if n, err := strconv.Atoi(v); err == nil {
				return n
			}
		}
	}
	return 16
}

// logTime is the time of the first line of a JSON log with this message;
// zero when there is none.
func logTime(path, msg string) time.Time {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == msg {
			return line.Time
		}
	}
	return time.Time{}
}

// apiRequests reads the API server's request counters
// (apiserver_request_total) for the kinds a controller run writes, keyed
// "VERB resource[/subresource]".
func apiRequests(ctx context.Context, tb testing.TB) (map[string]float64, error) {
	kube, err := kubernetes.NewForConfig(testenv.Shared(tb).AdminConfig)
	if err != nil {
		return nil, err
	}
	body, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("API server metrics: %w", err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels, value, ok := strings.Cut(strings.TrimPrefix(line, "apiserver_request_total{"), "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		l := map[string]string{}
		for _, kv := range strings.Split(labels, ",") {
			if k, val, ok := strings.Cut(kv, "="); ok {
				l[k] = strings.Trim(val, `"`)
			}
		}
		switch l["verb"] {
		case "GET", "LIST", "WATCH":
			continue
		}
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		out[key] += v
	}
	return out, nil
}

// requestsDuring describes the write requests between two readings of
// apiRequests, per Service.
func requestsDuring(before, after map[string]float64, services int) string {
	var parts []string
	var total float64
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, d))
			total += d
		}
	}
	sort.Strings(parts)
	return fmt.Sprintf("%.0f write requests (%.2f per Service): %s", total, total/float64(services), strings.Join(parts, ", "))
}

// logLinesUntil returns a log's lines up to the first with this message.
func logLinesUntil(path, msg string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		out = append(out, line)
		if strings.Contains(line, `"msg":"`+msg+`"`) {
			break
		}
	}
	return out
}
