package controller_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/controller"
	"github.com/herald-lb/herald/internal/installation"
	"github.com/herald-lb/herald/internal/service"
)

// TestTwoInstallations: the default installation and installation blue
// (its own class, --lb-class-only) run side by side. Each allocates from
// its own pool only (the blue pool labelled herald.dev/installation=blue,
// the default one not), writes the status of its own pool alone, and
// writes, records events on and keeps its own Services alone: blue never
// takes the class-less Service the default installation serves for one it
// must let go (that Service's fields are not blue's field manager's),
// not while both run, nor when it restarts with the default one gone.
func TestTwoInstallations(t *testing.T) {
	e := newEnv(t)
	e.pool("first", func(s *v1beta1.IPAddressPoolSpec) { s.AutoAssign = ptr(true) }, "198.51.100.64/30")
	if _, err := e.herald.HeraldV1beta1().IPAddressPools().Create(e.ctx, &v1beta1.IPAddressPool{
		ObjectMeta: metav1.ObjectMeta{Name: "blue", Labels: map[string]string{v1beta1.LabelInstallation: "blue"}},
		Spec:       v1beta1.IPAddressPoolSpec{Addresses: []string{"198.51.100.72/30"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const blueClass = "example.com/blue"
	blueInst := installation.Name("blue")
	blueOpts := controller.Options{Installation: blueInst, Class: service.Class{OwnClassOnly: true, Name: blueClass}}
	stopDefault := e.startController(controller.Options{})
	stopBlue := e.startController(blueOpts)
	e.svc("plain", nil)
	e.svc("tinted", func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr(blueClass) })
	e.waitIPs("plain", "198.51.100.64")
	e.waitIPs("tinted", "198.51.100.72")
	e.waitCondition("tinted", v1beta1.ConditionAllocated, metav1.ConditionTrue, "Allocated")
	blueManager := blueInst.Writer(controller.FieldManager)
	e.eventually("each pool's status written by its installation", 10*time.Second, func() bool {
		return slices.Equal(poolManagers(e, "first"), []string{controller.FieldManager}) &&
			slices.Equal(poolManagers(e, "blue"), []string{blueManager})
	})
	e.settle("first")
	checkOnlyWriter(t, e, "plain", controller.FieldManager, blueManager)
	checkOnlyWriter(t, e, "tinted", blueManager, controller.FieldManager)
	// blue restarts while the default installation is gone: its restore
	// and every sync after it leave the class-less Service alone
	stopDefault()
	stopBlue()
	e.startController(blueOpts)
	e.updateSvc("plain", func(s *corev1.Service) { s.Labels = map[string]string{"touched": "yes"} })
	e.svc("sentinel", func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr(blueClass) })
	e.waitIPs("sentinel", "198.51.100.73")
	if got := ips(e.get("plain")); !slices.Equal(got, []string{"198.51.100.64"}) {
		t.Errorf("with the default installation gone, blue changed Service plain's addresses to %v", got)
	}
	checkOnlyWriter(t, e, "plain", controller.FieldManager, blueManager)
}

// poolManagers are the field managers of the pool's status, sorted.
func poolManagers(e *env, name string) []string {
	p, err := e.herald.HeraldV1beta1().IPAddressPools().Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, mf := range p.ManagedFields {
		if mf.Subresource == "status" && !slices.Contains(out, mf.Manager) {
			out = append(out, mf.Manager)
		}
	}
	slices.Sort(out)
	return out
}

// checkOnlyWriter: Service name has fields of field manager own and none
// of other, and Events from own's source and none from other's.
func checkOnlyWriter(t *testing.T, e *env, name, own, other string) {
	t.Helper()
	s := e.get(name)
	var managers []string
	for _, mf := range s.ManagedFields {
		managers = append(managers, mf.Manager)
	}
	if !slices.Contains(managers, own) || slices.Contains(managers, other) {
		t.Errorf("Service %s: field managers %v, want %s and not %s", name, managers, own, other)
	}
	evs, err := e.kube.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, ev := range evs.Items {
		sources = append(sources, ev.Source.Component)
	}
	if !slices.Contains(sources, own) || slices.Contains(sources, other) {
		t.Errorf("Service %s: events from %v, want from %s and none from %s", name, sources, own, other)
	}
}
