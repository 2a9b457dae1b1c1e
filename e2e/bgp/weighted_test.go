package bgp

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// weightedConnections is how many new connections the external client
// opens to check the split: 6,000, twice the 3,000 the issue asks for,
// because FRR truncates the weights to 16, 33 and 50 (of 99), which puts
// node1's expected share 3 % under 1/6 already; with 3,000 connections
// the binomial spread (0.7 points) then leaves the ±10 % bound 1.7
// standard deviations away (a run in 20 fails), with 6,000 2.4 (one in
// 100). They take a few seconds.
const weightedConnections = 6000

// weightedTolerance is how far each node's share of the connections (and
// of the FIB weights) may be from its share of the ready pods, relative.
const weightedTolerance = 0.10

// TestWeightedECMP: an advertisement with linkBandwidth:
// ReadyLocalEndpoints and an externalTrafficPolicy: Local Service with 1,
// 2 and 3 ready pods on node1, node2 and node3. The router (FRR, weighted
// ECMP by default when every path carries the link-bandwidth community)
// installs next hops weighted 1:2:3, new connections from the external
// client split 1:2:3 over the nodes, and scaling one node's pods moves
// its weight.
func TestWeightedECMP(t *testing.T) {
	l, h := suite.Herald(t)
	apply(t, h, `
apiVersion: herald.dev/v1beta1
kind: BGPAdvertisement
metadata: {name: attrs-weighted}
spec:
  ipAddressPools: [attrs]
  linkBandwidth: ReadyLocalEndpoints
`, "bgpadvertisement/attrs-weighted")
	const app = "weighted"
	nodes := allNodes(l)
	slices.Sort(nodes)
	if len(nodes) != 3 {
		t.Fatalf("want 3 nodes, have %v", nodes)
	}
	pods := map[string]int{nodes[0]: 1, nodes[1]: 2, nodes[2]: 3}
	// the Service first: creating it creates the test's namespace
	_, ips := suite.Service(t, app, poolAttrs, func(s *corev1.Service) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.Selector = map[string]string{"app": app}
	})
	for _, n := range nodes {
		createPinned(t, l, app, n, pods[n])
	}
	vip := ips[0]
	waitReadyPods(t, l, app, pods)
	r := waitWeights(t, l, vip, pods)
	t.Logf("FIB for %s: %s", vip, hopsText(r))
	checkLinkBandwidth(t, l, r, pods)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	tally, err := l.HTTPCount(ctx, lab.External, vip, 80, weightedConnections)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d connections in %s: by node %v, by pod %v, %d failed (%s)", weightedConnections,
		time.Since(start).Round(time.Millisecond), tally.Nodes, tally.Pods, tally.Errors, tally.LastError)
	if tally.Errors > 0 {
		t.Errorf("%d of %d requests failed, last: %s", tally.Errors, weightedConnections, tally.LastError)
	}
	if why := offShare(tally.Nodes, pods, weightedTolerance); why != "" {
		t.Errorf("connections by node %v, want the split of the pods %v within ±%.0f%%: %s", tally.Nodes, pods, 100*weightedTolerance, why)
	}

	// node1 scales from 1 to 3 pods: its weight follows.
	scaled := maps.Clone(pods)
	scaled[nodes[0]] = 3
	scale(t, l, pinnedName(app, nodes[0]), 3)
	waitReadyPods(t, l, app, scaled)
	r = waitWeights(t, l, vip, scaled)
	t.Logf("after scaling %s to 3 pods, FIB for %s: %s", nodes[0], vip, hopsText(r))
	checkLinkBandwidth(t, l, route(t, l, host(vip)), scaled)
}

// checkLinkBandwidth: each node's path carries the link-bandwidth
// community of its pods, 125,000 bytes/s (1 Mbit/s) each, with the
// nodes' AS (64513).
func checkLinkBandwidth(t testing.TB, l *lab.Lab, r lab.Route, pods map[string]int) {
	t.Helper()
	byAddr := map[netip.Addr]string{}
	for _, n := range l.Nodes() {
		byAddr[n.IPv4] = n.Name
	}
	for _, p := range r.Paths {
		node := byAddr[p.Peer]
		want := fmt.Sprintf("LB:64513:%d ", 125_000*pods[node])
		if !strings.Contains(p.ExtendedCommunities+" ", want) {
			t.Errorf("path from %s (%s): extended communities %q, want %q", p.Peer, node, p.ExtendedCommunities, strings.TrimSpace(want))
		}
	}
	t.Logf("%s: %d paths with their link bandwidth", r.Prefix, len(r.Paths))
}

// waitWeights waits until the router's FIB for vip has a next hop per
// node of pods, weighted as the pods within weightedTolerance.
func waitWeights(t testing.TB, l *lab.Lab, vip netip.Addr, pods map[string]int) lab.Route {
	t.Helper()
	var r lab.Route
	prefix := host(vip)
	labkit.EventuallyWhy(t, 60*time.Second, fmt.Sprintf("FIB weights for %s as the pods %v", prefix, pods), func() (bool, string) {
		r = route(t, l, prefix)
		w := map[string]int{}
		for _, nh := range r.FIB {
			w[nh.Node] += nh.Weight
		}
		if len(w) != len(pods) {
			return false, hopsText(r)
		}
		if why := offShare(w, pods, weightedTolerance); why != "" {
			return false, hopsText(r) + ": " + why
		}
		return true, ""
	})
	return r
}

// offShare says how got's shares differ from want's beyond tol
// (relative), "" when each key's share is within it.
func offShare(got, want map[string]int, tol float64) string {
	var gotSum, wantSum int
	for _, v := range got {
		gotSum += v
	}
	for _, v := range want {
		wantSum += v
	}
	if gotSum == 0 {
		return "nothing counted"
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		g, w := float64(got[k])/float64(gotSum), float64(want[k])/float64(wantSum)
		if math.Abs(g-w) > tol*w {
			return fmt.Sprintf("%s has %.3f, want %.3f", k, g, w)
		}
	}
	return ""
}

func hopsText(r lab.Route) string {
	var s []string
	for _, nh := range r.FIB {
		s = append(s, fmt.Sprintf("%s(%s) weight %d", nh.Addr, nh.Node, nh.Weight))
	}
	return fmt.Sprint(s)
}

func pinnedName(app, node string) string { return app + "-" + node }

// createPinned creates a Deployment of replicas podserver pods labelled
// app=app, bound to node (spec.nodeName), deleted at the end of the test.
func createPinned(t testing.TB, l *lab.Lab, app, node string, replicas int) {
	t.Helper()
	n, grace := int32(replicas), int64(2)
	labels := map[string]string{"app": app, "pinned": node}
	env := func(n, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: n, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: pinnedName(app, node)},
		Spec: appsv1.DeploymentSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeName:                      node,
					TerminationGracePeriodSeconds: &grace,
					Containers: []corev1.Container{{
						Name: "podserver", Image: lab.BackendImage, ImagePullPolicy: corev1.PullNever,
						Args: []string{"-name=$(POD_NAME)", "-node=$(NODE_NAME)", "-ports=8080,8443"},
						Env:  []corev1.EnvVar{env("POD_NAME", "metadata.name"), env("NODE_NAME", "spec.nodeName")},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
							PeriodSeconds: 1, FailureThreshold: 2,
						},
					}},
				},
			},
		},
	}
	deps := l.Client().AppsV1().Deployments(testNS)
	t.Cleanup(func() { _ = deps.Delete(context.Background(), d.Name, metav1.DeleteOptions{}) })
	if _, err := deps.Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func scale(t testing.TB, l *lab.Lab, name string, replicas int) {
	t.Helper()
	deps := l.Client().AppsV1().Deployments(testNS)
	s, err := deps.GetScale(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Spec.Replicas = int32(replicas)
	if _, err := deps.UpdateScale(context.Background(), name, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitReadyPods waits until app has exactly want[node] Ready, not
// terminating pods on each node.
func waitReadyPods(t testing.TB, l *lab.Lab, app string, want map[string]int) {
	t.Helper()
	labkit.EventuallyWhy(t, 2*time.Minute, fmt.Sprintf("Ready pods of %s per node %v", app, want), func() (bool, string) {
		pods, err := l.Client().CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			return false, err.Error()
		}
		got := map[string]int{}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && lab.PodReady(&p) {
				got[p.Spec.NodeName]++
			}
		}
		return maps.Equal(got, want), fmt.Sprint(got)
	})
}
