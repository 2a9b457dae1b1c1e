package metallb

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/testenv"
)

// probeInterval of the client's monitors (one per address).
const probeInterval = 50 * time.Millisecond

// TestLiveTakeoverFromMetalLBKeepsServing runs the takeover
// docs/metallb.md prescribes against a running MetalLB with 20 Services
// in L2 mode and 4 in BGP mode (its native speaker peering with the lab's
// FRR): every Service keeps its addresses, Herald adopts them (events,
// log line, count), every L2 address is served within lab.Takeover (at
// most lab.TakeoverGap unanswered and lab.TakeoverOverlap answered by two
// MACs, measured from the client), and HTTP from behind the
// router to every BGP address fails for at most maxBGPTakeoverGap, with
// no next hop in the router's FIB leading to anything but a node. The
// controller's adoption rules alone are internal/controller's
// TestAdoptsMetalLBAddressesThatFit.
func TestLiveTakeoverFromMetalLBKeepsServing(t *testing.T) {
	l := lab.Shared(t)
	ctx := context.Background()
	build := buildMetalLB(t)
	t.Logf("MetalLB images and manifest from %s", build.Dir)
	installMetalLB(t, ctx, l, build)
	work := t.TempDir()
	applyWithRetry(t, ctx, l, writeFile(t, work, "metallb-config.yaml", metallbConfig))

	before := createServices(t, ctx, l)
	addrs, bgpAddrs := splitByMode(before)
	owners := map[netip.Addr]string{}
	for _, vip := range addrs {
		owners[vip] = waitOneNode(t, ctx, l, vip, "MetalLB")
	}
	nodes := len(l.Nodes())
	routedBefore := waitRouted(t, ctx, l, bgpAddrs, nodes, "MetalLB")
	t.Logf("MetalLB serves %d Services on %d L2 addresses and %d BGP ones: %v; L2 owners %v; BGP next hops %v",
		len(before), len(addrs), len(bgpAddrs), before, owners, routedBefore)

	// Herald's images on every node before the procedure, as a user's
	// nodes would pull them.
	var images deploy.Images
	if err := images.Build(); err != nil {
		t.Fatal(err)
	}
	if err := l.ImportImages(ctx, images.List()...); err != nil {
		t.Fatal(err)
	}
	bin := tools(t, ctx, work)

	monitors := map[netip.Addr]*lab.Monitor{}
	for _, vip := range addrs {
		m, err := startMonitor(l, vip, probeInterval)
		if err != nil {
			t.Fatal(err)
		}
		monitors[vip] = m
		t.Cleanup(func() { _, _ = m.Stop() })
	}
	for vip, m := range monitors {
		if _, err := m.Wait(ctx, time.Now(), func(p lab.Probe) bool { return p.Answered() }); err != nil {
			t.Fatalf("monitor of %s: %v", vip, err)
		}
	}

	routes := lab.StartRouteMonitor(t, l)
	hops := watchHops(ctx, l, bgpAddrs)
	traffic := watchHTTP(t, l, bgpAddrs)
	start := time.Now()
	config := migrate(t, ctx, l, bin, work)
	script := plan(t, ctx, l, bin, work, config)
	runScript(t, ctx, l, bin, script, start)
	upgradeServerSide(t, ctx, l)
	h, err := deploy.Attach(ctx, l, &images)
	if err != nil {
		t.Fatal(err)
	}
	procedure := time.Since(start)

	settled := time.Now()
	for vip, m := range monitors {
		_, err := m.Wait(ctx, settled, func(p lab.Probe) bool { n := p.Nodes(); return len(n) == 1 && n[0] != "" })
		if err != nil {
			t.Fatalf("%s after the takeover: %v", vip, err)
		}
	}
	// a second of probes after every address is answered again, for an
	// overlap that would start late
	quiet := time.Now().Add(time.Second)
	var logs = map[netip.Addr]lab.ProbeLog{}
	for vip, m := range monitors {
		if _, err := m.Wait(ctx, quiet, func(lab.Probe) bool { return true }); err != nil {
			t.Fatal(err)
		}
		probes, err := m.Stop()
		if err != nil {
			t.Fatal(err)
		}
		logs[vip] = probes.After(start)
	}
	routedAfter := waitRouted(t, ctx, l, bgpAddrs, nodes, "Herald")
	strays, samples := hops.end()
	t.Logf("procedure (migrate, plan, script, Herald rolled out): %v", procedure.Round(time.Millisecond))
	report(t, l, start, addrs, owners, logs)
	reportBGP(t, start, bgpAddrs, routes.Events(t), routedBefore, routedAfter)
	t.Logf("router FIB sampled %d times during the takeover: %d next hops leading to no node", samples, len(strays))
	for _, a := range bgpAddrs {
		r := outageOf(traffic[a].Tries(t))
		t.Logf("%-16s HTTP from behind the router every %v: %d of %d requests failed, longest outage %v",
			a, httpEvery, r.failed, r.requests, r.gap.Round(time.Millisecond))
		if r.gap > maxBGPTakeoverGap {
			t.Errorf("%s: no HTTP answer from behind the router for %v; want at most %v", a, r.gap.Round(time.Millisecond), maxBGPTakeoverGap)
		}
	}
	for _, s := range strays {
		t.Errorf("the router sent %s, which is no node", s)
	}

	after := addresses(t, ctx, l)
	for name, ips := range before {
		if !slices.Equal(ips, after[name]) {
			t.Errorf("Service %s had %v from MetalLB, has %v from Herald", name, ips, after[name])
		}
	}
	checkAdoption(t, ctx, l, h, len(before))
}

// tools puts the pinned kubectl and the kubectl-herald plugin built from
// this checkout in a directory for PATH.
func tools(t *testing.T, ctx context.Context, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	kubectl, err := testenv.Binary("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(kubectl, filepath.Join(bin, "kubectl")); err != nil {
		t.Fatal(err)
	}
	if err := testenv.GoBuild(ctx, filepath.Join(bin, "kubectl-herald"), "./kubectl-herald"); err != nil {
		t.Fatal(err)
	}
	return bin
}

func command(ctx context.Context, l *lab.Lab, bin string, name string, args ...string) *exec.Cmd {
	root, _ := testenv.RepoRoot()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "KUBECONFIG="+l.AdminKubeconfig(),
		"HERALD_MANIFESTS="+filepath.Join(root, "manifests"))
	return cmd
}

// migrate runs `kubectl herald migrate` against the cluster and returns
// the file holding the Herald objects.
func migrate(t *testing.T, ctx context.Context, l *lab.Lab, bin, dir string) string {
	t.Helper()
	cmd := command(ctx, l, bin, filepath.Join(bin, "kubectl"), "herald", "migrate")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	t.Logf("kubectl herald migrate report:\n%s", stderr.String())
	if err != nil {
		t.Fatalf("kubectl herald migrate: %v", err)
	}
	t.Logf("converted configuration:\n%s", out)
	return writeFile(t, dir, "herald-config.yaml", string(out))
}

// plan runs `kubectl herald migrate --plan` and returns the script.
func plan(t *testing.T, ctx context.Context, l *lab.Lab, bin, dir, config string) string {
	t.Helper()
	cmd := command(ctx, l, bin, filepath.Join(bin, "kubectl"), "herald", "migrate", "--plan", "--config-file", config)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl herald migrate --plan: %v", err)
	}
	t.Logf("takeover script:\n%s", out)
	return writeFile(t, dir, "takeover.sh", string(out))
}

// runScript runs the takeover script and logs each line of its output
// with the time since start.
func runScript(t *testing.T, ctx context.Context, l *lab.Lab, bin, script string, start time.Time) {
	t.Helper()
	cmd := command(ctx, l, bin, "sh", script)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The script times the gap (MetalLB's speakers stopping, then the
	// release of the hold): its kubectl calls get the CPU an operator's
	// machine would give them, not what the lab leaves.
	l.RunAtLabWeight(cmd.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); pw.Close() }()
	var b strings.Builder
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		fmt.Fprintf(&b, "%8v  %s\n", time.Since(start).Round(time.Millisecond), sc.Text())
	}
	err := <-done
	t.Logf("takeover script output (time since the start of migrate):\n%s", b.String())
	if err != nil {
		t.Fatalf("takeover script: %v", err)
	}
}

// report logs every address's gap and overlap, their p50 and max, and
// fails where the address was not served within lab.Takeover.
func report(t *testing.T, l *lab.Lab, start time.Time, addrs []netip.Addr, owners map[netip.Addr]string, logs map[netip.Addr]lab.ProbeLog) {
	t.Helper()
	var gaps, overlaps []time.Duration
	for _, vip := range addrs {
		pl := logs[vip]
		gap, n := pl.LongestGap()
		from, to := gapSpan(pl)
		overlap, m := pl.LongestConflict()
		newOwner := ""
		if len(pl) > 0 {
			newOwner = strings.Join(pl[len(pl)-1].Nodes(), ",")
		}
		t.Logf("%-22s MetalLB %s -> Herald %s: %d probes, gap %v (%d unanswered, %v to %v after the start of migrate), two MACs %v (%d probes, %d in all)",
			vip, owners[vip], newOwner, len(pl), gap.Round(time.Millisecond), n, from.Sub(start).Round(time.Millisecond), to.Sub(start).Round(time.Millisecond),
			overlap.Round(time.Millisecond), m, len(pl.Conflicts()))
		for _, p := range pl.Conflicts() {
			t.Logf("%-22s   two MACs at %v: %v (%v)", vip, p.Sent.Sub(start).Round(time.Millisecond), p.Nodes(), p.MACs())
		}
		if len(pl.Conflicts()) > 0 {
			logSpeakersOn(t, l, vip)
		}
		gaps, overlaps = append(gaps, gap), append(overlaps, overlap)
		lab.CheckServed(t, vip.String(), pl, lab.Takeover())
	}
	t.Logf("takeover over %d addresses: gap p50 %v max %v; two MACs p50 %v max %v",
		len(addrs), p50(gaps), slices.Max(gaps).Round(time.Millisecond), p50(overlaps), slices.Max(overlaps).Round(time.Millisecond))
}

// gapSpan is the send time of the first probe of the longest unanswered
// run and of the first answered probe after it.
func gapSpan(pl lab.ProbeLog) (from, to time.Time) {
	var best lab.Run
	for _, r := range pl.Runs(func(p lab.Probe) bool { return !p.Answered() }) {
		if r.D > best.D {
			best = r
		}
	}
	return best.At, best.At.Add(best.D)
}

func p50(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2].Round(time.Millisecond)
}

// checkAdoption: an AdoptedFromMetalLB event on every Service, no
// NotAdoptedFromMetalLB one, and the leader's count line.
func checkAdoption(t *testing.T, ctx context.Context, l *lab.Lab, h *deploy.Herald, services int) {
	t.Helper()
	for _, svc := range append(testServices(), bgpServices()...) {
		msg := l.WaitEvent(t, time.Time{}, "Service", svc.Name, "AdoptedFromMetalLB")
		t.Logf("%s: %s", svc.Name, msg)
	}
	evs, err := l.Client().CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=NotAdoptedFromMetalLB"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs.Items {
		t.Errorf("%s %s: NotAdoptedFromMetalLB: %s", ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Message)
	}
	leader, err := h.WaitLeader(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	out := controllerLog(t, l, leader)
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "took over addresses assigned by MetalLB") {
			line = l
		}
	}
	t.Logf("controller %s: %s", leader, line)
	want := []string{fmt.Sprintf(`"adopted":%d`, services), `"notAdopted":0`}
	if !strings.Contains(line, "adopted=") && !lab.ContainsAll(line, want) {
		t.Errorf("controller %s logged %q; want the count line with %v", leader, line, want)
	}
	if strings.Contains(line, "adopted=") && !lab.ContainsAll(line, []string{fmt.Sprintf("adopted=%d", services), "notAdopted=0"}) {
		t.Errorf("controller %s logged %q; want adopted=%d notAdopted=0", leader, line, services)
	}
}

// controllerLog reads the controller Pod's log from its node's pod log
// directory (the lab's API server cannot reach the kubelets for
// `kubectl logs`).
func controllerLog(t *testing.T, l *lab.Lab, pod string) string {
	t.Helper()
	out := podLogs(t, l, pod, "controller")
	if out == "" {
		t.Fatalf("no log of controller %s under %s", pod, l.Dir())
	}
	return out
}

// podLogs is the log of every container named container of the pods
// whose name starts with pod, from the nodes' pod log directories.
func podLogs(t *testing.T, l *lab.Lab, pod, container string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(l.Dir(), "nodes", "*", "pod-logs", deploy.Namespace+"_"+pod+"*", container, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

func containsAny(s string, fragments ...string) bool {
	return slices.ContainsFunc(fragments, func(f string) bool { return strings.Contains(s, f) })
}

// logSpeakersOn logs what Herald's speakers said about vip (announcing,
// stopping, conflicts) and about the hold and the member list, to explain
// two MACs answering.
func logSpeakersOn(t *testing.T, l *lab.Lab, vip netip.Addr) {
	t.Helper()
	for _, line := range strings.Split(podLogs(t, l, "herald-speaker-", "speaker"), "\n") {
		if strings.Contains(line, `"`+vip.String()+`"`) || containsAny(line, "hold", "member state changed", "Marking") {
			t.Logf("%-22s   speaker: %s", vip, line)
		}
	}
}

// upgradeServerSide applies manifests/herald.yaml over what the script
// applied (kubectl's client-side apply) with server-side apply and a
// field manager of its own, as a GitOps tool upgrading Herald would: it
// must not conflict (an env fieldRef without the apiVersion the API
// server defaults did: ObjectFieldSelector is atomic).
func upgradeServerSide(t *testing.T, ctx context.Context, l *lab.Lab) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Kubectl(ctx, "apply", "--server-side", "--field-manager=herald-upgrade", "-f", filepath.Join(root, "manifests", "herald.yaml")); err != nil {
		t.Fatalf("upgrading the takeover's install with server-side apply: %v", err)
	}
}
