package speaker

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
)

// TestDrainStep walks the drain label's life: graceful shutdown from the
// moment the label is seen for the wait, then withdrawal; none when the
// label was there at start, when the wait is 0, or after the label went.
func TestDrainStep(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	const wait = 5 * time.Second
	type step struct {
		draining bool
		at       time.Duration
		gshut    bool
		recheck  time.Duration
	}
	cases := map[string][]step{
		"labelled while running": {
			{false, 0, false, 0}, {true, time.Second, true, wait}, {true, 3 * time.Second, true, 3 * time.Second},
			{true, 6 * time.Second, false, 0}, {true, 7 * time.Second, false, 0}, {false, 8 * time.Second, false, 0},
		},
		"labelled at start": {{true, 0, false, 0}, {true, time.Second, false, 0}},
		"undrained mid-wait": {
			{false, 0, false, 0}, {true, time.Second, true, wait}, {false, 2 * time.Second, false, 0},
			{true, 3 * time.Second, true, wait},
		},
		"at the wait's end": {{false, 0, false, 0}, {true, 0, true, wait}, {true, wait, false, 0}},
	}
	for name, steps := range cases {
		var st bgpDrain
		for i, s := range steps {
			var gshut bool
			var recheck time.Duration
			st, gshut, recheck = drainStep(st, s.draining, t0.Add(s.at), wait)
			if gshut != s.gshut || recheck != s.recheck {
				t.Errorf("%s, step %d: gshut=%v recheck=%s, want %v %s", name, i, gshut, recheck, s.gshut, s.recheck)
			}
		}
	}
	if _, gshut, _ := drainStep(bgpDrain{known: true}, true, t0, 0); gshut {
		t.Error("no wait: graceful shutdown anyway")
	}
}

// TestDrainLabelGracefulThenWithdrawn: labelling the node herald.dev/drain
// keeps its BGP path, sent with GRACEFUL_SHUTDOWN, for the wait, then
// withdraws it (the session stays); removing the label advertises it
// again without the marking.
func TestDrainLabelGracefulThenWithdrawn(t *testing.T) {
	svc := benchService(1, 1)
	kube, herald := announcingClients(svc)
	node := benchNode(1)
	node.Status.Addresses = append(node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "2001:db8::11"})
	nodes := kube.CoreV1().Nodes()
	if _, err := nodes.Update(context.Background(), node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	routes := &recordingBGP{}
	s, _ := startedSpeaker(t, kube, herald, 1, Options{NodeName: "node1", Namespace: testNS, BGP: routes,
		GracefulShutdownWait: 5 * time.Second, Now: func() time.Time { return now }})
	s.ready.synced.Store(true)
	must(t, s.cluster.sliceIndex.Add(readySlice(svc)))
	s.cluster.svcCache.touchObject(svc)
	reconcile := func(what string, paths int, gshut bool) {
		t.Helper()
		if err := s.reconcile(context.Background()); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(routes.last.Sessions) != 1 || len(routes.last.Paths) != paths || routes.last.GracefulShutdown != gshut {
			t.Fatalf("%s: BGP %+v, want 1 session, %d paths, graceful shutdown %v", what, routes.last, paths, gshut)
		}
	}
	label := func(v *string) {
		t.Helper()
		n, err := nodes.Get(context.Background(), "node1", metav1.GetOptions{})
		must(t, err)
		n.Labels = map[string]string{}
		if v != nil {
			n.Labels[v1beta1.LabelDrain] = *v
		}
		_, err = nodes.Update(context.Background(), n, metav1.UpdateOptions{})
		must(t, err)
		poll(t, "the label in the cache", func() bool {
			n, err := s.cluster.nodes.Get("node1")
			if err != nil {
				return false
			}
			_, has := n.Labels[v1beta1.LabelDrain]
			return has == (v != nil)
		})
	}
	reconcile("announcing", 1, false)
	yes := "true"
	label(&yes)
	reconcile("drain seen: graceful shutdown", 1, true)
	now = now.Add(4 * time.Second)
	reconcile("still waiting", 1, true)
	now = now.Add(time.Second)
	reconcile("wait over: withdrawn", 0, false)
	label(nil)
	reconcile("undrained", 1, false)
}
