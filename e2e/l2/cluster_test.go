package l2

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// What a real cluster does to Herald every day, with a client probing the
// addresses all along.

// monitorAll probes every address (ARP or NDP) every 10 ms from the client.
func monitorAll(t *testing.T, l *lab.Lab, vips []netip.Addr) []*lab.Monitor {
	t.Helper()
	var mons []*lab.Monitor
	for _, vip := range vips {
		m, err := l.StartMonitor(vip, 10*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Wait(context.Background(), time.Time{}, lab.Probe.Answered); err != nil {
			t.Fatal(err)
		}
		mons = append(mons, m)
	}
	return mons
}

// stopAll stops the monitors and checks, per address, the probes after
// from (checkServed).
func stopAll(t *testing.T, vips []netip.Addr, mons []*lab.Monitor, from time.Time, what string, overlap time.Duration) {
	t.Helper()
	for i, m := range mons {
		probes, err := m.Stop()
		if err != nil {
			t.Fatal(err)
		}
		lab.CheckServed(t, fmt.Sprintf("%s, %s", what, vips[i]), probes.After(from), lab.Steady().WithOverlap(overlap))
	}
}

// services creates n dual-stack Services with endpoints on every node and
// returns all their addresses.
func services(t testing.TB, l *lab.Lab, prefix string, n int) []netip.Addr {
	t.Helper()
	var vips []netip.Addr
	for i := range n {
		_, ips := suite.Service(t, fmt.Sprintf("%s-%d", prefix, i), poolL2, func(s *corev1.Service) {
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
			p := corev1.IPFamilyPolicyRequireDualStack
			s.Spec.IPFamilyPolicy = &p
		}, "node1", "node2", "node3")
		vips = append(vips, ips...)
	}
	return vips
}

// waitAvailable waits until the speaker DaemonSet's last rollout is
// complete, as an operator's upgrade or restart starts (docs/operations.md,
// Upgrade and restart): the DaemonSet controller replaces together every
// speaker not yet available (Ready for less than minReadySeconds, as
// after the previous test restarted some), outside maxUnavailable.
func waitAvailable(t *testing.T, h *deploy.Herald) {
	t.Helper()
	if err := h.WaitRollout(context.Background(), 2*time.Minute); err != nil {
		t.Fatal(err)
	}
}

// The tests that probe one address every 10 ms (drain, held-back
// speaker, kubelet stopped, crash loop) allow two nodes side by side for
// lab.HandOverOverlap at one hand-over (lab.Rolling). The rolling update
// and the restarts are held to the tighter targets of handovers_test.go.

// TestDrainOwnerNode drains the node announcing an address (kubectl drain:
// cordon, evict its pods; the speaker, a DaemonSet Pod, stays): the address
// stays answered throughout, and an ETP Local Service whose one pod ran
// there follows its pod to the node where the scheduler places it again:
// that node alone answers, and the pod sees the client's own address.
func TestDrainOwnerNode(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	_, ips := suite.Service(t, "drain", poolL2, nil, "node1", "node2", "node3")
	vip := ips[0]
	own := harness.Owner(t, l, vip)
	local := localOn(t, l, "drain-local", own)
	servedLocally(t, l, local, own)
	mons := monitorAll(t, l, []netip.Addr{vip})
	start := time.Now()
	if err := l.Drain(ctx, own); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Uncordon(context.Background(), own) })
	_, _ = mons[0].Wait(ctx, time.Now().Add(2*time.Second), func(lab.Probe) bool { return true })
	// A drain loads the node (its pods stopping) and the machine: a
	// speaker not scheduled for longer than the member list's suspicion
	// timeout (DefaultTiming: about 200 ms) is declared dead, another node
	// claims the address, and the two answer side by side until the
	// refutation hands it back: the other node asks who answers and
	// yields to the owner's answer (l2owner's release ask, drain.txt; the fence
	// could not end it when the owner's claim was younger than its settle
	// time: 420 ms side by side in CI). Neither can happen before the owner
	// runs again: in an outside CI run the owner's answers came up to
	// 608 ms late, the other node claimed the address within that stall,
	// and the two answered side by side for 397 ms. So the drain is held to the
	// bound of a hand-over after the longest the owner went unscheduled in
	// that run, as the client saw it (measured before the hand-back: 55 ms
	// with the owner's speaker 382 ms late).
	probes, err := mons[0].Stop()
	if err != nil {
		t.Fatal(err)
	}
	probes = probes.After(start)
	what := fmt.Sprintf("drain of the owner %s, %s", own, vip)
	stall := probes.LongestConflictStall()
	if stall > 0 {
		what += fmt.Sprintf(" (answers up to %v late while two nodes answered)", stall.Round(time.Millisecond))
	}
	lab.CheckServed(t, what, probes, lab.Steady().WithOverlap(lab.HandOverOverlap+stall))
	logLateAnswers(t, l, "drain of the owner "+own)
	var moved string
	labkit.Eventually(t, time.Minute, "drain-local's pod Ready on another node", func() bool {
		moved, _ = l.ReadyPodNode(ctx, testNS, "drain-local")
		return moved != "" && moved != own
	})
	servedLocally(t, l, local, moved)
	if err := l.Uncordon(ctx, own); err != nil {
		t.Fatal(err)
	}
	// the drained node's backend comes back once it is schedulable again
	if err := l.WaitBackendsReady(ctx, testNS, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := h.Heal(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSpeakerHeldBackOnReadyNode: a node is Ready but its speaker cannot
// start (its image is not there yet). No address may go dark: the others
// must not hand it addresses. When the speaker arrives it takes its share
// without a gap.
func TestSpeakerHeldBackOnReadyNode(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	vips := services(t, l, "held", 3)
	held := "node3"
	if err := h.HoldSpeaker(ctx, held); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.ReleaseSpeaker(context.Background(), held) })
	// the others restart too (a new member list that never saw node3)
	for _, n := range []string{"node1", "node2"} {
		if err := h.Speakers[n].Kill(); err != nil {
			t.Fatal(err)
		}
		if _, err := h.StartSpeaker(n); err != nil {
			t.Fatal(err)
		}
	}
	for _, vip := range vips {
		labkit.Eventually(t, 30*time.Second, fmt.Sprintf("%s answered while %s has no speaker", vip, held), func() bool {
			a := harness.Probe(t, l, vip)
			return len(a) == 1 && a[0].Node != held
		})
	}
	mons := monitorAll(t, l, vips)
	start := time.Now()
	if err := h.ReleaseSpeaker(ctx, held); err != nil {
		t.Fatal(err)
	}
	_, _ = mons[0].Wait(ctx, time.Now().Add(3*time.Second), func(lab.Probe) bool { return true })
	// The arriving speaker takes its share as a restarted one does in a
	// rolling update: make-before-break, the old owner answering until it
	// has read the new owner's gratuitous ARP or unsolicited NA. So it is
	// held to the same bound. Seen in CI: the answers of both nodes
	// reached the client 70-85 ms late in one burst, and the two answered
	// side by side for 79 ms.
	stopAll(t, vips, mons, start, held+"'s speaker arriving", lab.HandOverOverlap)
}

// TestKubeletStoppedOwnerKeepsAnnouncing stops the owner's kubelet: the
// node lifecycle controller marks the node NotReady, but its speaker is
// alive and the node forwards, so the address stays where it is and
// answered (KEP-3458: readiness is not a reason to withdraw). Then the
// Node object is deleted: the address moves to another node, without a
// gap; the kubelet, started again, registers the node anew.
func TestKubeletStoppedOwnerKeepsAnnouncing(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	_, ips := suite.Service(t, "kubelet-stopped", poolL2, nil, "node1", "node2", "node3")
	vip := ips[0]
	own := harness.Owner(t, l, vip)
	mons := monitorAll(t, l, []netip.Addr{vip})
	start := time.Now()
	if err := l.StopKubelet(own); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Heal(context.Background()) })
	labkit.Eventually(t, lab.NodeMonitorGracePeriod+time.Minute, own+" NotReady", func() bool {
		n, err := l.Client().CoreV1().Nodes().Get(ctx, own, metav1.GetOptions{})
		return err == nil && !lab.NodeIsReady(n)
	})
	notReady := time.Now()
	// well past the speakers' reaction to the Node change
	_, _ = mons[0].Wait(ctx, notReady.Add(5*time.Second), func(lab.Probe) bool { return true })
	t.Logf("kubelet on the owner %s stopped: NotReady after %v", own, notReady.Sub(start).Round(100*time.Millisecond))
	for _, p := range mons[0].Probes().After(notReady) {
		if p.Answered() && p.Nodes()[0] != own {
			t.Errorf("the address moved to %s although %s's speaker is alive", p.Nodes()[0], own)
			break
		}
	}
	// The Node object deleted (the node is gone for the cluster; its
	// speaker still runs): the address moves, make-before-break.
	deleted := time.Now()
	if err := l.Client().CoreV1().Nodes().Delete(ctx, own, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	moved, err := mons[0].Wait(ctx, deleted, func(p lab.Probe) bool { return p.Answered() && !slices.Contains(p.Nodes(), own) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Node %s deleted: the address answered by %s alone %v later", own, moved.Nodes()[0], moved.Sent.Sub(deleted).Round(time.Millisecond))
	_, _ = mons[0].Wait(ctx, moved.Sent.Add(2*time.Second), func(lab.Probe) bool { return true })
	probes, err := mons[0].Stop()
	if err != nil {
		t.Fatal(err)
	}
	lab.CheckServed(t, "owner's kubelet stopped, then its Node deleted", probes.After(start), lab.Rolling())
	// The old owner answers, releasing, until it has read the new owner's
	// gratuitous ARP; a starved speaker reads it late (checkServedOverlap
	// bounds that). Past a hand-over's bound it must never answer again.
	for _, p := range probes.After(moved.Sent.Add(lab.HandOverOverlap)) {
		if slices.Contains(p.Nodes(), own) {
			t.Errorf("the deleted node %s answered again at +%v", own, p.Sent.Sub(moved.Sent).Round(time.Millisecond))
			break
		}
	}
	// The kubelet, started again, registers the node anew; kube-proxy
	// exited when its Node was deleted, and starts again (its DaemonSet
	// would restart it on a real cluster).
	if err := l.StartKubelet(ctx, own); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitNodesReady(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := l.EnsureKubeProxy(ctx, own); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitBackendsReady(ctx, testNS, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := h.Heal(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSpeakerRollingUpdate restarts the speaker DaemonSet the way an
// upgrade does (kubectl rollout restart: one node at a time, each old Pod
// gets SIGTERM) while the client probes 12 addresses (6 dual-stack
// Services) every 20 ms, and
// the upgrade starts broken: the speaker's ClusterRole lost EndpointSlices
// (an RBAC regression, a partial upgrade). The rollout must stop at the
// first node: the new speaker there is neither Ready nor a member the
// others hand addresses to, so the DaemonSet waits on it, and no address
// goes dark. Once the RBAC is restored the speaker syncs and the rollout
// completes on the other nodes. Throughout, the targets of a hand-over
// (checkHandOvers): no gap longer than 100 ms, at most one probe round
// answered by two MACs at each change of owner. (A plain rolling update and the stopped one were two
// tests; the stopped one goes on into the plain one, on the other nodes,
// and one test spends 50 s less of the suite's time.)
func TestSpeakerRollingUpdate(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	vips := services(t, l, "rolling", 6)
	for _, vip := range vips {
		harness.Owner(t, l, vip)
	}
	roles := l.Client().RbacV1().ClusterRoles()
	orig, err := roles.Get(ctx, "herald-speaker", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	restore := func() error {
		cr, err := roles.Get(ctx, orig.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cr.Rules = orig.Rules
		_, err = roles.Update(ctx, cr, metav1.UpdateOptions{})
		return err
	}
	restored := false
	t.Cleanup(func() {
		if !restored {
			_ = restore()
		}
		_ = h.Heal(context.Background())
	})
	broken := orig.DeepCopy()
	broken.Rules = slices.DeleteFunc(broken.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.Resources, "endpointslices")
	})
	if len(broken.Rules) == len(orig.Rules) {
		t.Fatal("the herald-speaker ClusterRole has no EndpointSlices rule to remove")
	}
	waitAvailable(t, h)
	if _, err := roles.Update(ctx, broken, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	mons := monitorEvery(t, l, vips, probeRound)
	controls, cmons := startControls(t, l)
	start := time.Now()
	if _, err := l.Kubectl(ctx, "-n", deploy.Namespace, "rollout", "restart", "daemonset/"+deploy.SpeakerDaemonSet); err != nil {
		t.Fatal(err)
	}
	var stuck corev1.Pod
	labkit.Eventually(t, 2*time.Minute, "a new speaker Pod running but not Ready", func() bool {
		pods, err := h.Pods(ctx, "speaker")
		if err != nil {
			return false
		}
		for _, p := range pods {
			if p.CreationTimestamp.After(start.Add(-time.Second)) && p.Status.Phase == corev1.PodRunning && !lab.PodReady(&p) {
				stuck = p
				return true
			}
		}
		return false
	})
	// The rollout must wait on it: for longer than the DaemonSet's
	// minReadySeconds plus the readiness probe's period, no second
	// new Pod, and the stuck one still not Ready.
	const watch = 15 * time.Second
	deadline := time.Now().Add(watch)
	for time.Now().Before(deadline) {
		ds, err := l.Client().AppsV1().DaemonSets(deploy.Namespace).Get(ctx, deploy.SpeakerDaemonSet, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ds.Status.UpdatedNumberScheduled > 1 {
			t.Fatalf("the rollout went on to a second node (%d updated) while %s on %s cannot sync", ds.Status.UpdatedNumberScheduled, stuck.Name, stuck.Spec.NodeName)
		}
		p, err := l.Client().CoreV1().Pods(deploy.Namespace).Get(ctx, stuck.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if lab.PodReady(p) {
			t.Fatalf("%s on %s turned Ready without EndpointSlices access", stuck.Name, stuck.Spec.NodeName)
		}
		_, _ = mons[0].Wait(ctx, time.Now().Add(500*time.Millisecond), func(lab.Probe) bool { return true }) // half a second of probes
	}
	for _, vip := range vips {
		for _, a := range harness.Probe(t, l, vip) {
			if a.Node == stuck.Spec.NodeName {
				t.Errorf("%s answered by %s, whose speaker cannot sync", vip, a.Node)
			}
		}
	}
	t.Logf("rollout stopped at %s on %s for %v", stuck.Name, stuck.Spec.NodeName, watch)
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	restored = true
	healing := time.Now()
	if _, err := l.Kubectl(ctx, "-n", deploy.Namespace, "rollout", "status", "daemonset/"+deploy.SpeakerDaemonSet, "--timeout=300s"); err != nil {
		t.Fatal(err)
	}
	t.Logf("RBAC restored: the rollout of the %d speakers completed %v later", len(l.Nodes()), time.Since(healing).Round(100*time.Millisecond))
	// and a little after the last new speaker turned Ready
	_, _ = mons[0].Wait(ctx, time.Now().Add(2*time.Second), func(lab.Probe) bool { return true })
	// Each hand-over is make-before-break: the old owner stops answering
	// when it has read the new owner's gratuitous ARP or unsolicited NA.
	checkHandOvers(t, "speaker rolling update that cannot sync, then RBAC restored", vips, mons, controls, cmons, start)
	logLateAnswers(t, l, "speaker rolling update")
}
