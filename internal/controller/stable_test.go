package controller_test

import (
	"regexp"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/controller"
	"github.com/herald-lb/herald/internal/service"
)

// Edits a Service's request still allows keep its addresses.
func TestEditsKeepAddressesTheRequestAllows(t *testing.T) {
	e := newEnv(t)
	e.pool("dual", nil, "198.51.100.0/28", "2001:db8:5::/120")
	mw := e.watchMoments()
	e.startController(controller.Options{})
	e.svc("blocker", nil)
	e.waitIPs("blocker", "198.51.100.0")
	e.svc("s", nil)
	e.waitIPs("s", "198.51.100.1")
	e.deleteSvc("blocker") // .0 is free now: a needless move would take it
	e.settle("dual")
	e.updateSvc("s", func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationAllowSharedIP] = "team-a" })
	e.settle("dual")
	if got := ips(e.get("s")); !slices.Equal(got, []string{"198.51.100.1"}) {
		t.Errorf("adding %s moved the Service to %v", v1beta1.AnnotationAllowSharedIP, got)
	}
	e.updateSvc("s", func(s *corev1.Service) {
		p := corev1.IPFamilyPolicyRequireDualStack
		s.Spec.IPFamilyPolicy, s.Spec.IPFamilies = &p, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	})
	e.waitIPs("s", "198.51.100.1", "2001:db8:5::1") // ::0, the subnet-router anycast address, is skipped
	e.settle("dual")
	dups, moved := mw.problems()
	if len(dups) > 0 {
		t.Errorf("duplicates: %v", dups)
	}
	for _, m := range moved {
		if m != "s: map[198.51.100.1:true 2001:db8:5::1:true]" {
			t.Errorf("moved: %s", m)
		}
	}
}

// A released address is held back for the hold time.
func TestReleasedAddressIsHeldBack(t *testing.T) {
	e := newEnv(t)
	e.pool("p", nil, "198.51.100.0/29")
	e.startController(controller.Options{ReleaseHold: 3 * time.Second})
	e.svc("first", nil)
	e.waitIPs("first", "198.51.100.0")
	// Taken before the delete: the controller may release the address
	// (and start the hold) before deleteSvc returns here, so a time taken
	// after it is up to a few milliseconds late (a cold CI run measured
	// 2.994 s from it).
	released := time.Now()
	e.deleteSvc("first")
	e.svc("second", nil)
	if got := e.waitAnyIPs("second", 1); got[0] == "198.51.100.0" && time.Since(released) < 3*time.Second {
		t.Fatalf("the released address went to another Service %s after its release", time.Since(released).Round(time.Millisecond))
	}
	e.svc("wants-it", func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationLoadBalancerIPs] = "198.51.100.0" })
	e.waitIPs("wants-it", "198.51.100.0")
	if d := time.Since(released); d < 3*time.Second {
		t.Errorf("a Service requesting the released address got it after %s, before the 3 s hold", d.Round(time.Millisecond))
	}
}

// --lb-class-only switched on clears Herald's status from class-less
// Services (no address shown twice); switched off gives them addresses
// again.
func TestOwnClassOnlyAcrossRestarts(t *testing.T) {
	e := newEnv(t)
	e.pool("p", nil, "198.51.100.64/29")
	mw := e.watchMoments()
	stop := e.startController(controller.Options{})
	e.svc("none", nil)
	e.waitIPs("none", "198.51.100.64")
	stop()
	stop = e.startController(controller.Options{Class: service.Class{OwnClassOnly: true}})
	e.svc("own", func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr(v1beta1.LoadBalancerClass) })
	e.waitAnyIPs("own", 1)
	e.waitIPs("none")
	stop()
	e.startController(controller.Options{})
	e.waitAnyIPs("none", 1)
	e.settle("p")
	dups, _ := mw.problems()
	if len(dups) > 0 {
		t.Errorf("addresses shown by two Services at one moment: %v", dups)
	}
	if a, b := ips(e.get("none")), ips(e.get("own")); len(a) != 1 || len(b) != 1 || a[0] == b[0] {
		t.Errorf("none %v, own %v", a, b)
	}
}

// The announcing node changes: UpdatedLoadBalancer tells the story.
func TestUpdatedLoadBalancerEvent(t *testing.T) {
	e := newEnv(t)
	prefix := e.ns[:8] + "-"
	e.nodes(prefix+"n1", prefix+"n2")
	// Speakers that write their status at most every 2 s, as in a
	// cluster (1 s by default): the controller then mostly sees the new
	// owner not yet confirmed (Unknown) before it is, and the event must
	// come all the same.
	e.startSpeakers(nil, 2*time.Second, prefix+"n1", prefix+"n2")
	e.pool("p", nil, "198.51.100.64/29")
	if _, err := e.herald.HeraldV1beta1().L2Advertisements().Create(e.ctx, &v1beta1.L2Advertisement{
		ObjectMeta: metav1.ObjectMeta{Name: "l2"}, Spec: v1beta1.L2AdvertisementSpec{IPAddressPools: []string{"p"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.startController(controller.Options{})
	e.svc("web", nil)
	c := e.waitCondition("web", v1beta1.ConditionAnnounced, metav1.ConditionTrue, "Announced")
	m := regexp.MustCompile(`answered by node (\S+?)[;,)]?(\s|$)`).FindStringSubmatch(c.Message)
	if m == nil {
		t.Fatalf("no announcing node in %q", c.Message)
	}
	e.labelNode(m[1], corev1.LabelNodeExcludeBalancers, "true")
	e.waitEvent(e.ns, "web", "UpdatedLoadBalancer", "Announcing nodes changed")
}
