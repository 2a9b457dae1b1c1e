package speaker

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/config"
)

// TestDecisionMemoSeesOnlyWhatDecisionsRead walks the memo through the
// changes a speaker sees and checks which of them count as a change.
func TestDecisionMemoSeesOnlyWhatDecisionsRead(t *testing.T) {
	m := newDecisionMemo()
	ours := func(*corev1.Service) bool { return true }
	noSlices := func(*corev1.Service) []*discoveryv1.EndpointSlice { return nil }
	alive := func(string) bool { return true }
	pool := &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	in := config.Input{Pools: []*v1beta1.IPAddressPool{pool}}
	n1, n2 := node("node1", "198.51.100.11"), node("node2", "198.51.100.12")
	a, b := benchService(1, 2), benchService(2, 2)

	round := func(step string, svcs []*corev1.Service, nodes []*corev1.Node, live func(string) bool, want bool) {
		t.Helper()
		m.observe(in, nodes)
		got := m.services(svcs, ours, noSlices)
		if len(got) != len(svcs) {
			t.Fatalf("%s: %d Services converted, want %d", step, len(got), len(svcs))
		}
		if changed := m.take(live); changed != want {
			t.Errorf("%s: changed = %v, want %v", step, changed, want)
		}
	}
	round("first", []*corev1.Service{a, b}, []*corev1.Node{n1, n2}, alive, true)
	round("nothing new, other order", []*corev1.Service{b, a}, []*corev1.Node{n2, n1}, alive, false)

	a2 := a.DeepCopy()
	a2.ResourceVersion = "7"
	a2.Status.Conditions = []metav1.Condition{{Type: "Announced"}}
	round("status write announce ignores", []*corev1.Service{a2, b}, []*corev1.Node{n1, n2}, alive, false)

	a3 := a2.DeepCopy()
	a3.Status.LoadBalancer.Ingress[0].IP = "2001:db8:f::99"
	round("address changed", []*corev1.Service{a3, b}, []*corev1.Node{n1, n2}, alive, true)

	round("Service deleted", []*corev1.Service{a3}, []*corev1.Node{n1, n2}, alive, true)

	n1beat := n1.DeepCopy()
	n1beat.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}}
	round("Node heartbeat", []*corev1.Service{a3}, []*corev1.Node{n1beat, n2}, alive, false)

	n1label := n1beat.DeepCopy()
	n1label.Labels = map[string]string{"zone": "a"}
	round("Node label", []*corev1.Service{a3}, []*corev1.Node{n1label, n2}, alive, true)

	round("member died", []*corev1.Service{a3}, []*corev1.Node{n1label, n2}, func(n string) bool { return n != "node2" }, true)

	in = config.Input{Pools: []*v1beta1.IPAddressPool{pool.DeepCopy()}}
	round("pool object replaced", []*corev1.Service{a3}, []*corev1.Node{n1label, n2}, func(n string) bool { return n != "node2" }, true)
}
