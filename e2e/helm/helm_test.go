package helm

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
	"github.com/herald-lb/herald/test/testenv"
)

const testNS = "helm"

// config is a pool of the lab's L2 segment announced from every node.
var config = fmt.Sprintf(`
apiVersion: herald.dev/v1beta1
kind: IPAddressPool
metadata: {name: helm}
spec:
  addresses: [%s, %q]
---
apiVersion: herald.dev/v1beta1
kind: L2Advertisement
metadata: {name: helm}
spec:
  ipAddressPools: [helm]
`, lab.L2PoolV4, lab.L2PoolV6)

// TestHelmInstallUpgradeUninstall runs the chart's life in one cluster:
// each step needs the one before.
func TestHelmInstallUpgradeUninstall(t *testing.T) {
	l := lab.Shared(t)
	ctx := context.Background()

	// install on a cluster that already holds the configuration and a
	// dual-stack Service asking for one address per family: the
	// controller and the three speakers start together while the client
	// probes both addresses; from the first answer on, no gap and never
	// two nodes side by side (beyond a hand-over's overlap) as the
	// speakers join one after the other
	svc := lab.LoadBalancerService(testNS, "web", corev1.IPv4Protocol, corev1.IPv6Protocol)
	svc.Annotations = map[string]string{v1beta1.AnnotationLoadBalancerIPs: freshVIPs[0].String() + "," + freshVIPs[1].String()}
	t.Cleanup(func() { _ = l.DeleteService(context.Background(), testNS, "web") })
	created, mons := prepareFreshInstall(t, l, svc)
	var images deploy.Images
	start := time.Now()
	h, err := deploy.InstallHelm(ctx, l, &images)
	if err != nil {
		stopMonitors(mons)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = h.Kubectl(context.Background(), "delete", "namespace", deploy.Namespace, "--ignore-not-found", "--wait=false")
	})
	checkFreshInstall(t, mons, start)
	checkDefaults(t, h)

	// a dual-stack Service gets one address per family, each answered by
	// exactly one node, and HTTP through the IPv4 one reaches a pod
	vips, err := h.ServeService(ctx, created, "node1", "node2", "node3")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(vips, freshVIPs) {
		t.Errorf("Service web has %v, want the requested %v", vips, freshVIPs)
	}
	for _, vip := range vips {
		t.Logf("%s announced by %s", vip, harness.Owner(t, l, vip))
	}
	labkit.Eventually(t, 30*time.Second, "an HTTP answer through "+vips[0].String(), func() bool {
		a, err := l.HTTPGet(ctx, lab.Client, vips[0], 80)
		if err == nil {
			t.Logf("%s:80 answered by %s on %s", vips[0], a.Pod, a.Node)
		}
		return err == nil
	})

	checkWindowsNodeGetsNoSpeaker(t, h, vips)

	// upgrade: a changed value rolls every speaker, one node at a time,
	// with every address answered throughout. Once the install's rollout
	// is complete, as an operator's upgrade starts: the DaemonSet
	// controller replaces together every speaker not yet available (Ready
	// for less than minReadySeconds), and an upgrade started right after
	// the install once replaced all three at once (a 3.1 s gap,
	// docs/operations.md, Upgrade and restart).
	if err := h.WaitRollout(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	before := speakerUIDs(t, h)
	mons = monitorAll(t, l, vips)
	start = time.Now()
	if err := h.HelmUpgrade(ctx, "--set", "logLevel=debug"); err != nil {
		stopMonitors(mons)
		t.Fatal(err)
	}
	took := time.Since(start)
	// and a little after the last new speaker turned Ready
	_, _ = mons[0].Wait(ctx, time.Now().Add(2*time.Second), func(lab.Probe) bool { return true })
	for i, m := range mons {
		probes, err := m.Stop()
		if err != nil {
			t.Fatal(err)
		}
		lab.CheckServed(t, fmt.Sprintf("helm upgrade, %s", vips[i]), probes.After(start), lab.Rolling())
	}
	t.Logf("helm upgrade rolled %d speakers in %v", len(l.Nodes()), took.Round(100*time.Millisecond))
	checkRolled(t, h, before)
	if err := h.CheckImages(ctx); err != nil {
		t.Error(err)
	}

	// the chart's ServiceMonitors, PodMonitors and PrometheusRule against
	// the Prometheus Operator's CRDs, and a Prometheus scraping what runs
	checkMonitoring(t, h)

	// uninstall: the Service and the configuration go first, while the
	// controller still removes the pool's finalizer (docs/operations.md,
	// Uninstall); then helm uninstall leaves the CRDs
	if err := l.DeleteService(ctx, testNS, "web"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Kubectl(ctx, "delete", "l2advertisements.herald.dev/helm", "ipaddresspools.herald.dev/helm", "--timeout=60s"); err != nil {
		t.Fatal(err)
	}
	if err := h.HelmUninstall(ctx); err != nil {
		t.Fatal(err)
	}
	checkLeftovers(t, h)
}

// checkDefaults: the chart's defaults that the operator-facing docs
// promise are what runs.
func checkDefaults(t *testing.T, h *deploy.Herald) {
	t.Helper()
	ctx := context.Background()
	kube := h.Lab.Client()
	if _, err := kube.PolicyV1().PodDisruptionBudgets(deploy.Namespace).Get(ctx, deploy.ControllerDeployment, metav1.GetOptions{}); err != nil {
		t.Errorf("controller PodDisruptionBudget: %v", err)
	}
	for _, name := range []string{"herald-controller-metrics", "herald-speaker-metrics"} {
		if _, err := kube.CoreV1().Services(deploy.Namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("metrics Service: %v", err)
		}
	}
	for _, c := range []string{"controller", "speaker"} {
		pods, err := h.Pods(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods {
			if p.Spec.PriorityClassName == "" || p.Spec.NodeSelector[corev1.LabelOSStable] != "linux" {
				t.Errorf("pod %s: priorityClassName %q, nodeSelector %v", p.Name, p.Spec.PriorityClassName, p.Spec.NodeSelector)
			}
		}
	}
}

// freshVIPs are the addresses the fresh install's Service asks for, in
// the lab's L2 pool.
var freshVIPs = []netip.Addr{netip.MustParseAddr("198.51.100.80"), netip.MustParseAddr("2001:db8:1::70")}

// prepareFreshInstall makes, before Herald is installed, its CRDs (from
// the chart, which helm install then leaves as they are), the
// configuration and svc, and starts a 10 ms ARP or NDP monitor on each of
// freshVIPs.
func prepareFreshInstall(t *testing.T, l *lab.Lab, svc *corev1.Service) (*corev1.Service, []*lab.Monitor) {
	t.Helper()
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Kubectl(ctx, "apply", "--server-side", "--field-manager=herald-e2e", "-f", filepath.Join(root, "charts", "herald", "crds")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s", "crd/ipaddresspools.herald.dev", "crd/l2advertisements.herald.dev"); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(f, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Kubectl(ctx, "apply", "--server-side", "--field-manager=herald-e2e", "-f", f); err != nil {
		t.Fatal(err)
	}
	created, err := l.CreateService(ctx, svc)
	if err != nil {
		t.Fatal(err)
	}
	return created, startMonitors(t, l, freshVIPs)
}

// checkFreshInstall waits until every monitor has an answer, and a little
// longer, then checks each address from its first answer on.
func checkFreshInstall(t *testing.T, mons []*lab.Monitor, start time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, m := range mons {
		first, err := m.Wait(ctx, start, lab.Probe.Answered)
		if err != nil {
			stopMonitors(mons)
			t.Fatalf("fresh install: %s never answered: %v", freshVIPs[i], err)
		}
		t.Logf("fresh install: %s first answered by %v %v after helm install began", freshVIPs[i], first.Nodes(), first.Sent.Sub(start).Round(time.Millisecond))
	}
	_, _ = mons[0].Wait(ctx, time.Now().Add(2*time.Second), func(lab.Probe) bool { return true })
	for i, m := range mons {
		probes, err := m.Stop()
		if err != nil {
			t.Fatal(err)
		}
		first, _ := probes.FirstAnswered("")
		lab.CheckServed(t, fmt.Sprintf("fresh install, %s", freshVIPs[i]), probes.After(first.Sent), lab.Rolling())
	}
}

// startMonitors probes every address (ARP or NDP) every 10 ms from the
// client.
func startMonitors(t *testing.T, l *lab.Lab, vips []netip.Addr) []*lab.Monitor {
	t.Helper()
	var mons []*lab.Monitor
	for _, vip := range vips {
		m, err := l.StartMonitor(vip, 10*time.Millisecond)
		if err != nil {
			stopMonitors(mons)
			t.Fatal(err)
		}
		mons = append(mons, m)
	}
	return mons
}

// monitorAll is startMonitors, returning once every monitor has seen an
// answer.
func monitorAll(t *testing.T, l *lab.Lab, vips []netip.Addr) []*lab.Monitor {
	t.Helper()
	mons := startMonitors(t, l, vips)
	for _, m := range mons {
		if _, err := m.Wait(context.Background(), time.Time{}, lab.Probe.Answered); err != nil {
			stopMonitors(mons)
			t.Fatal(err)
		}
	}
	return mons
}

func stopMonitors(mons []*lab.Monitor) {
	for _, m := range mons {
		_, _ = m.Stop()
	}
}

// speakerUIDs are the running speaker pods' UIDs.
func speakerUIDs(t *testing.T, h *deploy.Herald) map[string]string {
	t.Helper()
	pods, err := h.Pods(context.Background(), "speaker")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods {
		out[string(p.UID)] = p.Spec.NodeName
	}
	return out
}

// checkRolled: every node runs a new speaker pod with the new value.
func checkRolled(t *testing.T, h *deploy.Herald, before map[string]string) {
	t.Helper()
	pods, err := h.Pods(context.Background(), "speaker")
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != len(h.Lab.Nodes()) {
		t.Errorf("%d speaker pods after the upgrade, want one per node (%d)", len(pods), len(h.Lab.Nodes()))
	}
	for _, p := range pods {
		if _, old := before[string(p.UID)]; old {
			t.Errorf("speaker pod %s on %s was not replaced by the upgrade", p.Name, p.Spec.NodeName)
		}
		if !slices.Contains(p.Spec.Containers[0].Args, "--log-level=debug") {
			t.Errorf("speaker pod %s args %v lack --log-level=debug", p.Name, p.Spec.Containers[0].Args)
		}
	}
}
