package l2

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/lab"
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
		checkServedOverlap(t, fmt.Sprintf("%s, %s", what, vips[i]), probes.After(from), overlap)
	}
}

// services creates n dual-stack Services with endpoints on every node and
// returns all their addresses.
func services(t testing.TB, l *lab.Lab, prefix string, n int) []netip.Addr {
	t.Helper()
	var vips []netip.Addr
	for i := range n {
		_, ips := service(t, l, fmt.Sprintf("%s-%d", prefix, i), func(s *corev1.Service) {
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
			p := corev1.IPFamilyPolicyRequireDualStack
			s.Spec.IPFamilyPolicy = &p
		}, "node1", "node2", "node3")
		vips = append(vips, ips...)
	}
	return vips
}

// rollingOverlap is how long two nodes may answer side by side at one
// hand-over of a rolling update.
const rollingOverlap = 100 * time.Millisecond

// TestSpeakerRollingUpdate restarts the speaker DaemonSet the way an
// upgrade does (kubectl rollout restart: one node at a time, each old Pod
// gets SIGTERM) while the client probes every address every 10 ms: no gap
// longer than maxGap, and two nodes answering side by side only within a
// hand-over (rollingOverlap).
func TestSpeakerRollingUpdate(t *testing.T) {
	l, _ := herald(t)
	ctx := context.Background()
	vips := services(t, l, "rolling", 2)
	for _, vip := range vips {
		owner(t, l, vip)
	}
	mons := monitorAll(t, l, vips)
	start := time.Now()
	if err := l.RolloutRestart(ctx, deploy.Namespace, "daemonset/"+deploy.SpeakerDaemonSet); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	// and a little after the last new speaker turned Ready
	_, _ = mons[0].Wait(ctx, time.Now().Add(2*time.Second), func(lab.Probe) bool { return true })
	// Each hand-over is make-before-break: the old owner stops answering
	// when it has read the new owner's gratuitous ARP, which on this busy
	// machine takes up to a few tens of milliseconds (measured: 20-30 ms).
	stopAll(t, vips, mons, start, "speaker rolling update", rollingOverlap)
	logLateAnswers(t, l, "speaker rolling update")
	t.Logf("rolling update of %d speakers took %v", len(l.Nodes()), took.Round(100*time.Millisecond))
}

// TestDrainOwnerNode drains the node announcing an address (kubectl drain:
// cordon, evict its pods; the speaker, a DaemonSet Pod, stays): the address
// stays answered throughout, and an ETP Local Service follows its pod to
// the node where it is rescheduled.
func TestDrainOwnerNode(t *testing.T) {
	l, h := herald(t)
	ctx := context.Background()
	_, ips := service(t, l, "drain", nil, "node1", "node2", "node3")
	vip := ips[0]
	own := owner(t, l, vip)
	mons := monitorAll(t, l, []netip.Addr{vip})
	start := time.Now()
	if err := l.Drain(ctx, own); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Uncordon(context.Background(), own) })
	_, _ = mons[0].Wait(ctx, time.Now().Add(2*time.Second), func(lab.Probe) bool { return true })
	stopAll(t, []netip.Addr{vip}, mons, start, "drain of the owner "+own, 0)
	logLateAnswers(t, l, "drain of the owner "+own)
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
	l, h := herald(t)
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
		lab.Poll(t, fmt.Sprintf("%s answered while %s has no speaker", vip, held), 30*time.Second, func() bool {
			a := probe(t, l, vip)
			return len(a) == 1 && a[0].Node != held
		})
	}
	mons := monitorAll(t, l, vips)
	start := time.Now()
	if err := h.ReleaseSpeaker(ctx, held); err != nil {
		t.Fatal(err)
	}
	_, _ = mons[0].Wait(ctx, time.Now().Add(3*time.Second), func(lab.Probe) bool { return true })
	stopAll(t, vips, mons, start, held+"'s speaker arriving", 0)
}

// TestKubeletStoppedOwnerKeepsAnnouncing stops the owner's kubelet: the
// node lifecycle controller marks the node NotReady, but its speaker is
// alive and the node forwards, so the address stays where it is and
// answered (KEP-3458: readiness is not a reason to withdraw).
func TestKubeletStoppedOwnerKeepsAnnouncing(t *testing.T) {
	l, h := herald(t)
	ctx := context.Background()
	_, ips := service(t, l, "kubelet-stopped", nil, "node1", "node2", "node3")
	vip := ips[0]
	own := owner(t, l, vip)
	mons := monitorAll(t, l, []netip.Addr{vip})
	start := time.Now()
	if err := l.StopKubelet(own); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Heal(context.Background()) })
	lab.Poll(t, own+" NotReady", lab.NodeMonitorGracePeriod+time.Minute, func() bool {
		n, err := l.Client().CoreV1().Nodes().Get(ctx, own, metav1.GetOptions{})
		return err == nil && !lab.NodeIsReady(n)
	})
	notReady := time.Now()
	// well past the speakers' reaction to the Node change
	_, _ = mons[0].Wait(ctx, notReady.Add(5*time.Second), func(lab.Probe) bool { return true })
	probes, err := mons[0].Stop()
	if err != nil {
		t.Fatal(err)
	}
	after := probes.After(start)
	t.Logf("kubelet on the owner %s stopped: NotReady after %v", own, notReady.Sub(start).Round(100*time.Millisecond))
	checkServed(t, "owner's kubelet stopped", after)
	for _, p := range after.After(notReady) {
		if p.Answered() && p.Nodes()[0] != own {
			t.Errorf("the address moved to %s although %s's speaker is alive", p.Nodes()[0], own)
			break
		}
	}
	if err := l.StartKubelet(ctx, own); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitNodesReady(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
}
