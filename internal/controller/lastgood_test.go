package controller_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/config"
	"github.com/herald-lb/herald/internal/controller"
)

// svcCondition returns a Service condition, or nil.
func svcCondition(s *corev1.Service, typ string) *metav1.Condition {
	for i := range s.Status.Conditions {
		if s.Status.Conditions[i].Type == typ {
			return &s.Status.Conditions[i]
		}
	}
	return nil
}

// wantStillServed checks that a Service keeps its address, allocated from
// its pool and announced.
func (e *env) wantStillServed(name string, ip string) {
	e.t.Helper()
	s := e.get(name)
	if got := ips(s); !slices.Equal(got, []string{ip}) {
		e.t.Errorf("Service %s shows %v, want %s", name, got, ip)
	}
	if c := svcCondition(s, v1beta1.ConditionAllocated); c == nil || c.Reason != "Allocated" {
		e.t.Errorf("Service %s Allocated = %+v, want reason Allocated (its pool still in force)", name, c)
	}
	if c := svcCondition(s, v1beta1.ConditionAnnounced); c == nil || c.Status != metav1.ConditionTrue {
		e.t.Errorf("Service %s Announced = %+v, want True", name, c)
	}
}

// An accepted edit Build refuses keeps the pool's last valid version in
// force: no address loses its pool or its announcement.
func TestPoolEditsKeepTheLastValidVersion(t *testing.T) {
	e := newEnv(t)
	node := e.ns[:8] + "-node1"
	e.nodes(node)
	e.speakers(node)
	e.pool("older", nil, "198.51.100.64/29", "2001:db8:64::/124")
	time.Sleep(1100 * time.Millisecond) // creation timestamps have one-second resolution
	e.pool("newer", nil, "198.51.100.72/29")
	if _, err := e.herald.HeraldV1beta1().L2Advertisements().Create(e.ctx, &v1beta1.L2Advertisement{
		ObjectMeta: metav1.ObjectMeta{Name: "l2"}, Spec: v1beta1.L2AdvertisementSpec{IPAddressPools: []string{"older", "newer"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.startController(controller.Options{})
	e.svc("in-older", func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationAddressPool] = "older" })
	e.svc("in-newer", func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationAddressPool] = "newer" })
	e.waitIPs("in-older", "198.51.100.64")
	e.waitIPs("in-newer", "198.51.100.72")
	e.waitCondition("in-newer", v1beta1.ConditionAnnounced, metav1.ConditionTrue, "Announced")

	for _, c := range []struct {
		name, field string
		addresses   []string
	}{
		{"the older pool grown into the newer pool's range", "spec.addresses", []string{"198.51.100.64/28", "2001:db8:64::/124"}},
		{"an entry overlapping another entry", "spec.addresses[1]", []string{"198.51.100.64/29", "198.51.100.66/31"}},
		{"a reversed IPv6 range", "spec.addresses[1]", []string{"198.51.100.64/29", "2001:db8:64::f-2001:db8:64::1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.updatePool("older", func(p *v1beta1.IPAddressPool) { p.Spec.Addresses = c.addresses })
			e.eventually("pool older Valid=False keeping the last valid version", 20*time.Second, func() bool {
				v := poolCondition(e.getPool("older"), v1beta1.ConditionValid)
				return v != nil && v.Status == metav1.ConditionFalse && v.ObservedGeneration == e.getPool("older").Generation &&
					strings.Contains(v.Message, c.field) && strings.Contains(v.Message, "keeping the last valid version")
			})
			e.settle("older")
			if v := poolCondition(e.getPool("newer"), v1beta1.ConditionValid); v == nil || v.Status != metav1.ConditionTrue {
				t.Errorf("pool newer Valid = %+v", v)
			}
			if v := poolCondition(e.getPool("newer"), v1beta1.ConditionConflicting); v == nil || v.Status != metav1.ConditionFalse {
				t.Errorf("pool newer Conflicting = %+v", v)
			}
			e.wantStillServed("in-older", "198.51.100.64")
			e.wantStillServed("in-newer", "198.51.100.72")
			// The last valid ranges hand out addresses: .65 is in them.
			e.svc("next", func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationAddressPool] = "older" })
			e.waitIPs("next", "198.51.100.65")
			e.deleteSvc("next")
			e.eventually("next deleted", 10*time.Second, func() bool {
				l, _ := e.kube.CoreV1().Services(e.ns).List(e.ctx, metav1.ListOptions{})
				return l != nil && len(l.Items) == 2
			})
		})
	}
	// The fix puts the new version in force.
	e.updatePool("older", func(p *v1beta1.IPAddressPool) { p.Spec.Addresses = []string{"198.51.100.64/29", "198.51.100.80/29"} })
	e.eventually("pool older valid again", 20*time.Second, func() bool {
		v := poolCondition(e.getPool("older"), v1beta1.ConditionValid)
		return v != nil && v.Status == metav1.ConditionTrue
	})
}

// Deleting and recreating a BGPPeer's password Secret keeps the peer (with
// its last password) instead of dropping it.
func TestPeerKeepsItsPasswordWhileTheSecretIsRecreated(t *testing.T) {
	e := newEnv(t)
	secrets := e.kube.CoreV1().Secrets(heraldNS)
	mk := func(pw string) {
		t.Helper()
		if _, err := secrets.Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "peer-pw"},
			Data: map[string][]byte{"password": []byte(pw)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_ = secrets.Delete(e.ctx, "peer-pw", metav1.DeleteOptions{})
	mk("one")
	t.Cleanup(func() { _ = secrets.Delete(e.ctx, "peer-pw", metav1.DeleteOptions{}) })
	if _, err := e.herald.HeraldV1beta1().BGPPeers().Create(e.ctx, &v1beta1.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: "router"},
		Spec: v1beta1.BGPPeerSpec{MyASN: 64513, PeerASN: 64512, PeerAddress: "198.51.100.1", PasswordSecret: "peer-pw"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.startController(controller.Options{})
	peerValid := func(status metav1.ConditionStatus, fragment string) func() bool {
		return func() bool {
			p, err := e.herald.HeraldV1beta1().BGPPeers().Get(e.ctx, "router", metav1.GetOptions{})
			if err != nil {
				return false
			}
			for _, c := range p.Status.Conditions {
				if c.Type == v1beta1.ConditionValid && c.Status == status && strings.Contains(c.Message, fragment) {
					return true
				}
			}
			return false
		}
	}
	e.eventually("peer valid", 20*time.Second, peerValid(metav1.ConditionTrue, ""))
	if err := secrets.Delete(e.ctx, "peer-pw", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("peer kept in its last valid version", 20*time.Second,
		peerValid(metav1.ConditionFalse, "spec.passwordSecret: Secret peer-pw does not exist"))
	if !peerValid(metav1.ConditionFalse, "keeping the last valid version")() {
		t.Error(`the peer's Valid condition does not say "keeping the last valid version"`)
	}
	mk("two")
	e.eventually("peer valid again", 20*time.Second, peerValid(metav1.ConditionTrue, ""))
}

// Selector edits the API server accepts but Build refuses keep the last
// valid version: an L2Advertisement with operator "in" (lower case), a pool
// with In and no values in serviceAllocation.namespaceSelectors.
func TestSelectorEditsKeepTheLastValidVersion(t *testing.T) {
	e := newEnv(t)
	node := e.ns[:8] + "-node1"
	e.nodes(node)
	e.speakers(node)
	e.pool("p", nil, "198.51.100.96/29")
	l2 := e.herald.HeraldV1beta1().L2Advertisements()
	if _, err := l2.Create(e.ctx, &v1beta1.L2Advertisement{ObjectMeta: metav1.ObjectMeta{Name: "l2"}, Spec: v1beta1.L2AdvertisementSpec{
		IPAddressPools: []string{"p"},
		NodeSelectors:  []metav1.LabelSelector{{MatchLabels: map[string]string{"kubernetes.io/hostname": node}}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.startController(controller.Options{})
	e.svc("web", nil)
	e.waitIPs("web", "198.51.100.96")
	e.waitCondition("web", v1beta1.ConditionAnnounced, metav1.ConditionTrue, "Announced")

	adv, err := l2.Get(e.ctx, "l2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	adv.Spec.NodeSelectors = []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "kubernetes.io/hostname", Operator: "in", Values: []string{node}}}}}
	if _, err := l2.Update(e.ctx, adv, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("the API server refused the edit: %v", err)
	}
	e.eventually("L2Advertisement Valid=False keeping the last valid version", 20*time.Second, func() bool {
		a, err := l2.Get(e.ctx, "l2", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range a.Status.Conditions {
			if c.Type == v1beta1.ConditionValid && c.Status == metav1.ConditionFalse && c.ObservedGeneration == a.Generation &&
				strings.Contains(c.Message, "spec.nodeSelectors[0]") && strings.Contains(c.Message, "keeping the last valid version") {
				return true
			}
		}
		return false
	})

	e.updatePool("p", func(p *v1beta1.IPAddressPool) {
		p.Spec.ServiceAllocation = &v1beta1.ServiceAllocation{NamespaceSelectors: []metav1.LabelSelector{{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn}}}}}
	})
	e.eventually("pool Valid=False keeping the last valid version", 20*time.Second, func() bool {
		v := poolCondition(e.getPool("p"), v1beta1.ConditionValid)
		return v != nil && v.Status == metav1.ConditionFalse && strings.Contains(v.Message, "spec.serviceAllocation.namespaceSelectors[0]") &&
			strings.Contains(v.Message, "keeping the last valid version")
	})
	e.settle("p")
	e.wantStillServed("web", "198.51.100.96")
}

// The controller records each object's version in force in its status
// (status.inForce), and a controller started while a refused edit stands
// keeps that version, as the one that ran through the edit did: here the
// older pool edited to overlap a newer pool in use. Without the record the
// new controller would put the edited older pool in force, leave the newer
// one out, and hand the newer pool's free addresses to the older pool's
// tenants.
func TestRestartedControllerKeepsThePoolInForce(t *testing.T) {
	e := newEnv(t)
	node := e.ns[:8] + "-node1"
	e.nodes(node)
	e.speakers(node)
	e.pool("older", nil, "198.51.100.64/29")
	time.Sleep(1100 * time.Millisecond) // creation timestamps have one-second resolution
	e.pool("newer", nil, "198.51.100.72/29")
	l2 := e.herald.HeraldV1beta1().L2Advertisements()
	if _, err := l2.Create(e.ctx, &v1beta1.L2Advertisement{
		ObjectMeta: metav1.ObjectMeta{Name: "l2"}, Spec: v1beta1.L2AdvertisementSpec{IPAddressPools: []string{"older", "newer"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stop := e.startController(controller.Options{})
	e.svc("in-older", func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationAddressPool] = "older" })
	e.svc("in-newer", func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationAddressPool] = "newer" })
	e.waitIPs("in-older", "198.51.100.64")
	e.waitIPs("in-newer", "198.51.100.72")
	recorded := func(name string, gen int64, addrs ...string) func() bool {
		return func() bool {
			p := e.getPool(name)
			r := p.Status.InForce
			return r != nil && r.Generation == gen && r.UID == p.UID && slices.Equal(r.Spec.Addresses, addrs)
		}
	}
	e.eventually("pool older's record at generation 1", 20*time.Second, recorded("older", 1, "198.51.100.64/29"))
	e.eventually("pool newer's record at generation 1", 20*time.Second, recorded("newer", 1, "198.51.100.72/29"))
	e.eventually("the L2Advertisement's record", 20*time.Second, func() bool {
		a, err := l2.Get(e.ctx, "l2", metav1.GetOptions{})
		return err == nil && a.Status.InForce != nil && a.Status.InForce.Generation == a.Generation &&
			slices.Equal(a.Status.InForce.Spec.IPAddressPools, []string{"older", "newer"})
	})

	e.updatePool("older", func(p *v1beta1.IPAddressPool) { p.Spec.Addresses = []string{"198.51.100.64/28"} })
	keptOlder := func() bool {
		p := e.getPool("older")
		v := poolCondition(p, v1beta1.ConditionValid)
		return v != nil && v.Status == metav1.ConditionFalse && v.ObservedGeneration == p.Generation &&
			strings.Contains(v.Message, "keeping the last valid version")
	}
	e.eventually("pool older Valid=False keeping the last valid version", 20*time.Second, keptOlder)
	e.settle("older")
	if !recorded("older", 1, "198.51.100.64/29")() {
		t.Fatalf("pool older's record = %+v, want generation 1 (the refused edit is not recorded)", e.getPool("older").Status.InForce)
	}

	stop()
	e.startController(controller.Options{})
	e.settle("newer")
	e.eventually("the restarted controller keeps pool older at its last valid version", 20*time.Second, keptOlder)
	if v := poolCondition(e.getPool("newer"), v1beta1.ConditionValid); v == nil || v.Status != metav1.ConditionTrue {
		t.Errorf("pool newer Valid = %+v, want True (in force)", v)
	}
	e.wantStillServed("in-older", "198.51.100.64")
	e.wantStillServed("in-newer", "198.51.100.72")
	// The older pool hands out from its last valid range only: a tenant of
	// the older pool gets none of the newer pool's free addresses.
	for _, name := range []string{"o1", "o2", "o3", "o4", "o5", "o6", "o7"} {
		e.svc(name, func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationAddressPool] = "older" })
		e.waitAnyIPs(name, 1)
	}
	e.svc("o8", func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationAddressPool] = "older" })
	e.waitCondition("o8", v1beta1.ConditionAllocated, metav1.ConditionFalse, "PoolExhausted")
	if got := ips(e.get("o8")); len(got) != 0 {
		t.Errorf("Service o8 of the full older pool got %v, want none (the newer pool's addresses stay its own)", got)
	}
	e.svc("n1", func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationAddressPool] = "newer" })
	e.waitIPs("n1", "198.51.100.73")
}

// Each kind's record is written once: the record the controller compares
// with is the one the API server stored (defaults applied, empty lists
// dropped), and it must equal the record of the object as read, or every
// rebuild and every pool sync would send a status write.
func TestInForceRecordsReadBackEqual(t *testing.T) {
	e := newEnv(t)
	h := e.herald.HeraldV1beta1()
	e.pool("p", nil, "198.51.100.64/29")
	if _, err := h.L2Advertisements().Create(e.ctx, &v1beta1.L2Advertisement{ObjectMeta: metav1.ObjectMeta{Name: "l2"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.BGPPeers().Create(e.ctx, &v1beta1.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: "tor"},
		Spec: v1beta1.BGPPeerSpec{MyASN: 64513, PeerASN: 64512, PeerAddress: "198.51.100.1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.BGPAdvertisements().Create(e.ctx, &v1beta1.BGPAdvertisement{ObjectMeta: metav1.ObjectMeta{Name: "all"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.startController(controller.Options{})
	var why string
	e.eventuallyExplained("every record written and equal to the object's", 20*time.Second, func() bool {
		pool := e.getPool("p")
		l2, err1 := h.L2Advertisements().Get(e.ctx, "l2", metav1.GetOptions{})
		peer, err2 := h.BGPPeers().Get(e.ctx, "tor", metav1.GetOptions{})
		adv, err3 := h.BGPAdvertisements().Get(e.ctx, "all", metav1.GetOptions{})
		if err := errors.Join(err1, err2, err3); err != nil {
			why = err.Error()
			return false
		}
		why = fmt.Sprintf("pool %+v\nl2 %+v\npeer %+v\nadvertisement %+v", pool.Status.InForce, l2.Status.InForce, peer.Status.InForce, adv.Status.InForce)
		return equality.Semantic.DeepEqual(pool.Status.InForce, config.PoolInForce(pool)) &&
			equality.Semantic.DeepEqual(l2.Status.InForce, config.L2AdvertisementInForce(l2)) &&
			equality.Semantic.DeepEqual(peer.Status.InForce, config.PeerInForce(peer)) &&
			equality.Semantic.DeepEqual(adv.Status.InForce, config.BGPAdvertisementInForce(adv))
	}, func() string { return why })
}
