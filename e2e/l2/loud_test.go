package l2

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// The tests of issue 41's "fail loudly": a start condition that resolves
// by itself is waited for without a restart, one that cannot is a crash
// loop naming it, and an L2 announcer that stopped working is restarted.

const memberlistSecret = "herald-memberlist"

// speakerContainerStatus is the speaker container's status in p.
func speakerContainerStatus(p corev1.Pod) corev1.ContainerStatus {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == "speaker" {
			return c
		}
	}
	return corev1.ContainerStatus{}
}

// speakerPods are the speaker Pods (not terminating) by node.
func speakerPods(t testing.TB, h *deploy.Herald) map[string]corev1.Pod {
	t.Helper()
	pods, err := h.Pods(context.Background(), "speaker")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range pods {
		out[p.Spec.NodeName] = p
	}
	return out
}

// scaleController sets the controller Deployment's replicas.
func scaleController(t testing.TB, h *deploy.Herald, replicas int32) {
	t.Helper()
	if _, err := h.Kubectl(context.Background(), "-n", deploy.Namespace, "scale", "deployment/"+deploy.ControllerDeployment, fmt.Sprintf("--replicas=%d", replicas)); err != nil {
		t.Fatal(err)
	}
}

// httpGet reads url with a short timeout: status code and body.
func httpGet(url string) (int, string, error) {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), err
}

func healthURL(n lab.Node, path string) string {
	return "http://" + netip.AddrPortFrom(n.IPv4, 7473).String() + path
}

// TestSpeakersWaitForTheController: installed with the controller held
// back (scaled to 0, no member-list Secret, as at a first install), every
// speaker starts and waits: Running, not Ready, no restart, the reason in
// /readyz and in an event on its Pod. Once the controller runs (and
// creates the Secret) every one of them becomes Ready by itself, the same
// container, never restarted. (That the wait has no end is shown on
// simulated time by speaker's TestStartNeverGivesUp; the hold here is
// short.)
func TestSpeakersWaitForTheController(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	kube := l.Client()
	hold, err := time.ParseDuration(envOr("HERALD_E2E_CONTROLLER_HOLD", "20s"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := kube.AppsV1().Deployments(deploy.Namespace).Get(ctx, deploy.ControllerDeployment, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	replicas := *d.Spec.Replicas
	scaleController(t, h, 0)
	t.Cleanup(func() { scaleController(t, h, replicas) })
	// Every controller pod gone, terminating ones included: a controller
	// still shutting down writes a deleted member-list Secret back with
	// the key it saw.
	labkit.Eventually(t, time.Minute, "no controller pod, not even a terminating one", func() bool {
		pods, err := kube.CoreV1().Pods(deploy.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=herald,app.kubernetes.io/component=controller"})
		return err == nil && len(pods.Items) == 0
	})
	if err := kube.CoreV1().Secrets(deploy.Namespace).Delete(ctx, memberlistSecret, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	old := speakerPods(t, h)
	start := time.Now()
	for _, p := range old {
		if err := kube.CoreV1().Pods(deploy.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var waiting map[string]corev1.Pod
	labkit.Eventually(t, 2*time.Minute, "a new speaker Running and not Ready on every node", func() bool {
		waiting = speakerPods(t, h)
		if len(waiting) != len(l.Nodes()) {
			return false
		}
		for node, p := range waiting {
			cs := speakerContainerStatus(p)
			if p.UID == old[node].UID || cs.State.Running == nil || cs.Ready {
				return false
			}
		}
		return true
	})
	for _, n := range l.Nodes() {
		p := waiting[n.Name]
		l.WaitEvent(t, start, "Pod", p.Name, "MemberListWaiting", "the member list waits", deploy.Namespace+"/"+memberlistSecret+" not found")
		var code int
		var body string
		labkit.Eventually(t, 30*time.Second, n.Name+"'s /readyz naming the wait", func() bool {
			code, body, _ = httpGet(healthURL(n, "/readyz"))
			return code == http.StatusServiceUnavailable && strings.Contains(body, "waiting: member list: ")
		})
		t.Logf("%s /readyz: %d %s", n.Name, code, body)
		if code, body, err := httpGet(healthURL(n, "/healthz")); code != http.StatusOK {
			t.Errorf("%s /healthz = %d %q %v while waiting, want 200", n.Name, code, body, err)
		}
	}
	// Held back: the speakers stay Running, not Ready, never restarted.
	heldFrom := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for time.Since(heldFrom) < hold {
		for node, p := range speakerPods(t, h) {
			cs := speakerContainerStatus(p)
			if p.UID != waiting[node].UID || cs.RestartCount != 0 || cs.Ready || cs.State.Running == nil {
				t.Fatalf("%s's speaker changed while the controller was held back: pod %s (was %s), restarts %d, ready %v, state %+v",
					node, p.UID, waiting[node].UID, cs.RestartCount, cs.Ready, cs.State)
			}
		}
		<-tick.C
	}
	released := time.Now()
	scaleController(t, h, replicas)
	if err := h.WaitReady(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("speakers held %s (waiting %s in all), every one Ready %s after the controller was scaled up",
		hold, time.Since(start).Round(time.Second), time.Since(released).Round(100*time.Millisecond))
	for node, p := range speakerPods(t, h) {
		cs := speakerContainerStatus(p)
		if p.UID != waiting[node].UID || cs.RestartCount != 0 || !cs.Ready {
			t.Errorf("%s: pod %s (waited as %s), restarts %d, ready %v: want the same pod Ready with no restart", node, p.UID, waiting[node].UID, cs.RestartCount, cs.Ready)
		}
	}
}

// TestMalformedKeyCrashLoops: a speaker started with a malformed
// member-list key exits non-zero naming it: the kubelet restarts it with
// backoff (CrashLoopBackOff, the reason in the last termination message);
// once the key is fixed in the Secret the same Pod becomes Ready.
func TestMalformedKeyCrashLoops(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	secrets := l.Client().CoreV1().Secrets(deploy.Namespace)
	const node = "node3"
	sec, err := secrets.Get(ctx, memberlistSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	good := sec.Data["key"]
	setKey := func(key []byte) {
		s, err := secrets.Get(ctx, memberlistSecret, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Data["key"] = key
		if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { setKey(good) })
	setKey([]byte("short"))
	old := speakerPods(t, h)[node]
	if err := l.Client().CoreV1().Pods(deploy.Namespace).Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	var cs corev1.ContainerStatus
	labkit.Eventually(t, 2*time.Minute, node+"'s new speaker in CrashLoopBackOff naming the key", func() bool {
		p, ok := speakerPods(t, h)[node]
		if !ok || p.UID == old.UID {
			return false
		}
		pod, cs = p, speakerContainerStatus(p)
		term := cs.LastTerminationState.Terminated
		return cs.RestartCount > 0 && term != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
	})
	term := cs.LastTerminationState.Terminated
	t.Logf("%s: restarts %d, waiting %s, last exit %d: %s", pod.Name, cs.RestartCount, cs.State.Waiting.Reason, term.ExitCode, term.Message)
	if term.ExitCode != 1 || !strings.Contains(term.Message, "member-list key") || !strings.Contains(term.Message, "holds 5 bytes") {
		t.Fatalf("last termination: exit %d, message %q; want exit 1 naming the member-list key and what is wrong with it", term.ExitCode, term.Message)
	}
	setKey(good)
	fixed := time.Now()
	labkit.Eventually(t, 4*time.Minute, node+"'s speaker Ready once the key is fixed", func() bool {
		p, ok := speakerPods(t, h)[node]
		return ok && speakerContainerStatus(p).Ready
	})
	p := speakerPods(t, h)[node]
	t.Logf("%s Ready %s after the key was fixed, restarts %d", p.Name, time.Since(fixed).Round(100*time.Millisecond), speakerContainerStatus(p).RestartCount)
	if p.UID != pod.UID {
		t.Errorf("the speaker Pod was replaced (%s, was %s): it should recover in place", p.UID, pod.UID)
	}
}

// nftARPDrop drops, on node's eth0, every ARP packet the node sends with
// vip as its sender address (its answers and announcements for vip): the
// speaker's sends fail (ENOBUFS), as on a NIC or driver that stopped
// sending, while the node's own traffic flows. It returns the undo.
func nftARPDrop(t testing.TB, l *lab.Lab, node string, vip netip.Addr) func() {
	t.Helper()
	ctx := context.Background()
	for _, argv := range [][]string{
		{"nft", "add", "table", "netdev", "herald_e2e"},
		{"nft", "add", "chain", "netdev", "herald_e2e", "out", "{ type filter hook egress device eth0 priority 0; }"},
		{"nft", "add", "rule", "netdev", "herald_e2e", "out", "arp", "saddr", "ip", vip.String(), "counter", "drop"},
	} {
		if _, err := l.Exec(ctx, node, argv...); err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		if _, err := l.Exec(context.Background(), node, "nft", "delete", "table", "netdev", "herald_e2e"); err != nil {
			t.Error(err)
		}
	}
}

// TestFailedL2AnnouncerRestarts: the owner of an L2 address whose ARP
// sends fail turns /healthz red naming the L2 announcer, stops counting as
// an owner (another node answers for the address) and the kubelet
// restarts its container, the reason in the last termination message.
func TestFailedL2AnnouncerRestarts(t *testing.T) {
	l, h := suite.Herald(t)
	_, ips := suite.Service(t, "l2-announcer-fails", poolL2, nil, "node1", "node2", "node3")
	vip := ips[0]
	own := harness.Owner(t, l, vip)
	n, err := l.Node(own)
	if err != nil {
		t.Fatal(err)
	}
	before := speakerPods(t, h)[own]
	restarts := speakerContainerStatus(before).RestartCount
	undo := nftARPDrop(t, l, own, vip)
	blocked := time.Now()
	defer func() { undo() }()
	var body string
	labkit.Eventually(t, time.Minute, own+"'s /healthz red", func() bool {
		var code int
		code, body, _ = httpGet(healthURL(n, "/healthz"))
		return code == http.StatusInternalServerError
	})
	t.Logf("%s /healthz red %s after its ARP sends began to fail: %s", own, time.Since(blocked).Round(100*time.Millisecond), body)
	if !strings.Contains(body, "layer2: ") || !strings.Contains(body, "interface eth0, arp socket: send failing") {
		t.Errorf("/healthz body %q, want it to name the L2 announcer's failing ARP sends on eth0", body)
	}
	var other string
	labkit.Eventually(t, 30*time.Second, "another node answering for "+vip.String(), func() bool {
		a := harness.Probe(t, l, vip)
		if len(a) == 1 && a[0].Node != own {
			other = a[0].Node
		}
		return other != ""
	})
	t.Logf("%s answers for %s %s after the block", other, vip, time.Since(blocked).Round(100*time.Millisecond))
	var cs corev1.ContainerStatus
	labkit.Eventually(t, time.Minute, own+"'s speaker restarted", func() bool {
		p, ok := speakerPods(t, h)[own]
		cs = speakerContainerStatus(p)
		return ok && p.UID == before.UID && cs.RestartCount > restarts && cs.LastTerminationState.Terminated != nil
	})
	term := cs.LastTerminationState.Terminated
	t.Logf("restarts %d, last exit %d: %s", cs.RestartCount, term.ExitCode, term.Message)
	if term.ExitCode != 1 || !strings.Contains(term.Message, "L2 announcer failed: interface eth0, arp socket: send failing") {
		t.Errorf("last termination: exit %d, message %q; want exit 1 naming the L2 announcer's failure", term.ExitCode, term.Message)
	}
	undo()
	undo = func() {}
	if _, err := h.StartSpeaker(own); err != nil {
		t.Fatal(err)
	}
	if a := harness.Owner(t, l, vip); a == "" {
		t.Errorf("nobody answers for %s once the block is lifted", vip)
	}
}
