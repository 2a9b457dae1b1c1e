package helm

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

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
		owners[vip] = harness.Owner(t, l, vip)
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
	labkit.Eventually(t, 60*time.Second, "the speaker DaemonSet counting fake-linux", func() bool {
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
		lab.CheckServed(t, fmt.Sprintf("Windows and Linux nodes without kubelet added, %s", vips[i]), probes.After(start), lab.Rolling())
		if got := harness.Owner(t, l, vips[i]); got != owners[vips[i]] {
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
