package helm

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/internal/labkit"
	"github.com/herald-lb/herald/internal/testenv"
)

const testNS = "helm"

// maxGap is the longest time an address may go unanswered, and
// maxOverlap how long two nodes may answer side by side at one
// make-before-break hand-over of a rolling update: as in e2e/l2 (see its
// maxGap for the owner stalls of 150-210 ms seen on this machine).
const (
	maxGap     = 250 * time.Millisecond
	longGap    = 100 * time.Millisecond
	maxOverlap = 100 * time.Millisecond
)

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
		t.Logf("%s announced by %s", vip, owner(t, l, vip))
	}
	lab.Poll(t, "an HTTP answer through "+vips[0].String(), 30*time.Second, func() bool {
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
		checkServed(t, fmt.Sprintf("helm upgrade, %s", vips[i]), probes.After(start))
	}
	t.Logf("helm upgrade rolled %d speakers in %v", len(l.Nodes()), took.Round(100*time.Millisecond))
	checkRolled(t, h, before)
	if err := h.CheckImages(ctx); err != nil {
		t.Error(err)
	}

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
		checkServed(t, fmt.Sprintf("fresh install, %s", freshVIPs[i]), probes.After(first.Sent))
	}
}

// owner waits until exactly one node answers for vip and returns it.
func owner(t *testing.T, l *lab.Lab, vip netip.Addr) string {
	t.Helper()
	var node string
	lab.Poll(t, fmt.Sprintf("exactly one node answering for %s", vip), 30*time.Second, func() bool {
		var answers []lab.Answer
		var err error
		if vip.Is4() {
			answers, err = l.ARPProbe(context.Background(), vip)
		} else {
			answers, err = l.NDPProbe(context.Background(), vip, false)
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(answers) == 1 {
			node = answers[0].Node
		}
		return len(answers) == 1
	})
	return node
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

// checkServed: no gap longer than maxGap, and two nodes side by side for
// at most maxOverlap.
func checkServed(t *testing.T, what string, probes lab.ProbeLog) {
	t.Helper()
	gap, n := probes.LongestGap()
	conflict, m := probes.LongestConflict()
	t.Logf("%s: %d probes, %d unanswered (longest gap %v, %d probes), %d answered by two nodes (longest %v, %d probes)",
		what, len(probes), len(probes.Unanswered()), gap.Round(time.Millisecond), n, len(probes.Conflicts()), conflict.Round(time.Millisecond), m)
	if len(probes) == 0 {
		t.Errorf("%s: no probes", what)
	}
	switch {
	case gap > maxGap:
		t.Errorf("%s: no answer for %v (%d probes); want at most %v; around it:\n%s", what, gap.Round(time.Millisecond), n, maxGap, probes.AroundLongestGap(3))
	case gap > longGap:
		t.Logf("%s: no answer for %v (%d probes), more than %v; around it:\n%s", what, gap.Round(time.Millisecond), n, longGap, probes.AroundLongestGap(3))
	}
	if m > 1 && conflict > maxOverlap {
		t.Errorf("%s: two nodes answered side by side for %v; want at most %v; around it:\n%s", what, conflict.Round(time.Millisecond), maxOverlap, probes.AroundLongestConflict(3))
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

// checkLeftovers: after helm uninstall the CRDs stay, and in Herald's
// namespace only what the controller and the speakers made themselves
// (the member-list Secret, the leader Lease and the speakers' liveness
// Leases, as docs/operations.md says); no cluster-wide RBAC is left.
func checkLeftovers(t *testing.T, h *deploy.Herald) {
	t.Helper()
	ctx := context.Background()
	kube := h.Lab.Client()
	ns := deploy.Namespace
	out, err := h.Kubectl(ctx, "get", "crd", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range []string{"ipaddresspools", "l2advertisements", "bgppeers", "bgpadvertisements", "communities", "bfdprofiles"} {
		if !strings.Contains(out, "customresourcedefinition.apiextensions.k8s.io/"+crd+".herald.dev") {
			t.Errorf("helm uninstall removed CRD %s.herald.dev", crd)
		}
	}
	var left []string
	add := func(kind, name string, err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("listing %s: %v", kind, err)
		}
		if name != "" {
			left = append(left, kind+"/"+name)
		}
	}
	deps, err := kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	add("deployments", "", err)
	for _, o := range deps.Items {
		add("Deployment", o.Name, nil)
	}
	dss, err := kube.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
	add("daemonsets", "", err)
	for _, o := range dss.Items {
		add("DaemonSet", o.Name, nil)
	}
	svcs, err := kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	add("services", "", err)
	for _, o := range svcs.Items {
		add("Service", o.Name, nil)
	}
	sas, err := kube.CoreV1().ServiceAccounts(ns).List(ctx, metav1.ListOptions{})
	add("serviceaccounts", "", err)
	for _, o := range sas.Items {
		if o.Name != "default" {
			add("ServiceAccount", o.Name, nil)
		}
	}
	cms, err := kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	add("configmaps", "", err)
	for _, o := range cms.Items {
		if o.Name != "kube-root-ca.crt" {
			add("ConfigMap", o.Name, nil)
		}
	}
	pdbs, err := kube.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
	add("poddisruptionbudgets", "", err)
	for _, o := range pdbs.Items {
		add("PodDisruptionBudget", o.Name, nil)
	}
	roles, err := kube.RbacV1().Roles(ns).List(ctx, metav1.ListOptions{})
	add("roles", "", err)
	for _, o := range roles.Items {
		add("Role", o.Name, nil)
	}
	rbs, err := kube.RbacV1().RoleBindings(ns).List(ctx, metav1.ListOptions{})
	add("rolebindings", "", err)
	for _, o := range rbs.Items {
		add("RoleBinding", o.Name, nil)
	}
	crs, err := kube.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	add("clusterroles", "", err)
	for _, o := range crs.Items {
		if strings.HasPrefix(o.Name, "herald") {
			add("ClusterRole", o.Name, nil)
		}
	}
	crbs, err := kube.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	add("clusterrolebindings", "", err)
	for _, o := range crbs.Items {
		if strings.HasPrefix(o.Name, "herald") {
			add("ClusterRoleBinding", o.Name, nil)
		}
	}
	secrets, err := kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	add("secrets", "", err)
	for _, o := range secrets.Items {
		if o.Name != "herald-memberlist" {
			add("Secret", o.Name, nil)
		}
	}
	leases, err := kube.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
	add("leases", "", err)
	for _, o := range leases.Items {
		if o.Name != "herald-controller" && !strings.HasPrefix(o.Name, "herald-speaker-") {
			add("Lease", o.Name, nil)
		}
	}
	vaps, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
	add("validatingadmissionpolicies", "", err)
	for _, o := range vaps.Items {
		if strings.HasPrefix(o.Name, "herald") {
			add("ValidatingAdmissionPolicy", o.Name, nil)
		}
	}
	if len(left) > 0 {
		t.Errorf("helm uninstall left %s", strings.Join(left, ", "))
	}
}

// checkWindowsNodeGetsNoSpeaker registers two Node objects without a
// kubelet, one labelled Windows and one Linux (a kubelet would put its
// own OS label back), and checks that the DaemonSet controller gives the
// Linux one a speaker pod (it tolerates every taint, so the pod stays
// Pending there) and the Windows one none: the chart's nodeSelector. The
// addresses stay with their owner meanwhile: a node with no running
// speaker never takes an address.
func checkWindowsNodeGetsNoSpeaker(t *testing.T, h *deploy.Herald, vips []netip.Addr) {
	t.Helper()
	ctx := context.Background()
	l := h.Lab
	kube := l.Client()
	owners := map[netip.Addr]string{}
	for _, vip := range vips {
		owners[vip] = owner(t, l, vip)
	}
	mons := monitorAll(t, l, vips)
	start := time.Now()
	fake := map[string]string{"fake-windows": "windows", "fake-linux": "linux"}
	for name, os := range fake {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			corev1.LabelOSStable: os, corev1.LabelArchStable: "amd64", corev1.LabelHostname: name,
		}}}
		if _, err := kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			stopMonitors(mons)
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	// The Linux node counted shows the DaemonSet controller has seen both.
	want := int32(len(l.Nodes()) + 1)
	var desired int32
	lab.Poll(t, "the speaker DaemonSet counting fake-linux", 60*time.Second, func() bool {
		ds, err := kube.AppsV1().DaemonSets(deploy.Namespace).Get(ctx, deploy.SpeakerDaemonSet, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		desired = ds.Status.DesiredNumberScheduled
		return desired >= want && speakerFor(t, h, "fake-linux") != nil
	})
	if desired != want {
		t.Errorf("speaker DaemonSet wants %d pods, want %d (every Linux node, no Windows one)", desired, want)
	}
	if p := speakerFor(t, h, "fake-windows"); p != nil {
		t.Errorf("speaker pod %s made for a Windows node", p.Name)
	}
	for name := range fake {
		if err := kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	}
	// The DaemonSet controller (Kubernetes 1.37) keeps an unscheduled pod
	// whose node was deleted, and counts the node until the pod goes
	// (seen in the lab with a plain DaemonSet too); delete it as an
	// operator would.
	if p := speakerFor(t, h, "fake-linux"); p != nil {
		if err := kube.CoreV1().Pods(deploy.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}
	var state string
	labkit.EventuallyWhy(t, 90*time.Second, "the speaker DaemonSet back to the real nodes", func() (bool, string) {
		ds, err := kube.AppsV1().DaemonSets(deploy.Namespace).Get(ctx, deploy.SpeakerDaemonSet, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pods, err := h.Pods(ctx, "speaker")
		if err != nil {
			return false, err.Error()
		}
		var on []string
		for _, p := range pods {
			on = append(on, p.Name+"@"+p.Spec.NodeName)
		}
		state = fmt.Sprintf("desired %d, live speaker pods %v", ds.Status.DesiredNumberScheduled, on)
		return ds.Status.DesiredNumberScheduled == want-1 && len(pods) == len(l.Nodes()), state
	})
	t.Logf("fake nodes deleted: %s", state)
	for i, m := range mons {
		probes, err := m.Stop()
		if err != nil {
			t.Fatal(err)
		}
		checkServed(t, fmt.Sprintf("Windows and Linux nodes without kubelet added, %s", vips[i]), probes.After(start))
		if got := owner(t, l, vips[i]); got != owners[vips[i]] {
			t.Errorf("%s moved from %s to %s while nodes without a speaker came and went", vips[i], owners[vips[i]], got)
		}
	}
}

// speakerFor is the live (not terminating) speaker pod made for node,
// bound to it or still Pending with the DaemonSet's node affinity for it.
func speakerFor(t *testing.T, h *deploy.Herald, node string) *corev1.Pod {
	t.Helper()
	pods, err := h.Pods(context.Background(), "speaker")
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pods {
		if p.Spec.NodeName == node {
			return &pods[i]
		}
		if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
				for _, f := range term.MatchFields {
					if f.Key == "metadata.name" && slices.Contains(f.Values, node) {
						return &pods[i]
					}
				}
			}
		}
	}
	return nil
}
