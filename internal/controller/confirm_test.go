package controller_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/controller"
	"github.com/herald-lb/herald/internal/speaker"
)

// speakerLease plays a node's speaker Lease: renewed now, lasting secs.
func (e *env) speakerLease(node string, secs int32) {
	e.t.Helper()
	leases := e.kube.CoordinationV1().Leases(heraldNS)
	now := metav1.NewMicroTime(time.Now())
	name := v1beta1.SpeakerLeasePrefix + node
	l, err := leases.Get(e.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1beta1.LabelSpeakerLiveness: "true"}}}
		l.Spec = coordinationv1.LeaseSpec{HolderIdentity: &node, LeaseDurationSeconds: &secs, RenewTime: &now}
		if _, err := leases.Create(e.ctx, l, metav1.CreateOptions{}); err != nil {
			e.t.Fatal(err)
		}
		e.t.Cleanup(func() { _ = leases.Delete(e.ctx, name, metav1.DeleteOptions{}) })
		return
	}
	if err != nil {
		e.t.Fatal(err)
	}
	l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &secs, &now
	if _, err := leases.Update(e.ctx, l, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// report plays a node's speaker writing its SpeakerStatus: it answers for
// the addresses given, in L2 mode.
func (e *env) report(node string, addrs ...string) {
	e.t.Helper()
	st := v1beta1.SpeakerStatusStatus{Pod: "speaker-" + node, Summary: v1beta1.SpeakerSummary{L2Addresses: int32(len(addrs)), Sessions: "0/0"}}
	for _, a := range addrs {
		st.L2 = append(st.L2, v1beta1.L2AnnouncementStatus{Address: a, Interfaces: []string{"eth0"}, Since: metav1.Now()})
	}
	statuses := e.herald.HeraldV1beta1().SpeakerStatuses()
	got, err := statuses.Get(e.ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if _, err := statuses.Create(e.ctx, &v1beta1.SpeakerStatus{ObjectMeta: metav1.ObjectMeta{Name: node}, Status: st}, metav1.CreateOptions{}); err != nil {
			e.t.Fatal(err)
		}
		e.t.Cleanup(func() { _ = statuses.Delete(e.ctx, node, metav1.DeleteOptions{}) })
		return
	}
	if err != nil {
		e.t.Fatal(err)
	}
	got.Status = st
	if _, err := statuses.Update(e.ctx, got, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) l2Everywhere(pool string) {
	e.t.Helper()
	if _, err := e.herald.HeraldV1beta1().L2Advertisements().Create(e.ctx, &v1beta1.L2Advertisement{
		ObjectMeta: metav1.ObjectMeta{Name: "l2"}, Spec: v1beta1.L2AdvertisementSpec{IPAddressPools: []string{pool}}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func wantMessage(t *testing.T, c metav1.Condition, fragments ...string) {
	t.Helper()
	for _, f := range fragments {
		if !strings.Contains(c.Message, f) {
			t.Errorf("%s/%s message %q does not contain %q", c.Status, c.Reason, c.Message, f)
		}
	}
}

// TestAnnouncedOnlyOnceTheSpeakerConfirms: NotConfirmed while the node's
// live speaker has not reported the address, True naming it once it does,
// OwnerSpeakerDown when its Lease expires (no renewal: the controller's
// own timer notices), True again once it is renewed.
func TestAnnouncedOnlyOnceTheSpeakerConfirms(t *testing.T) {
	e := newEnv(t)
	node := e.ns[:8] + "-node1"
	e.nodes(node)
	e.pool("p", nil, "198.51.100.64/29")
	e.l2Everywhere("p")
	e.speakerLease(node, 3600)
	e.startController(controller.Options{})
	e.svc("web", nil)
	ip := e.waitAnyIPs("web", 1)[0]
	c := e.waitCondition("web", v1beta1.ConditionAnnounced, metav1.ConditionUnknown, v1beta1.ReasonNotConfirmed)
	wantMessage(t, c, ip+": node "+node+" should answer it (L2) and has not reported it yet")

	e.report(node, "198.51.100.99") // another address: still not confirmed
	e.report(node, ip)
	c = e.waitCondition("web", v1beta1.ConditionAnnounced, metav1.ConditionTrue, "Announced")
	wantMessage(t, c, ip+" answered by node "+node+" (L2)")

	e.speakerLease(node, 1) // not renewed again: expires in a second
	c = e.waitCondition("web", v1beta1.ConditionAnnounced, metav1.ConditionFalse, v1beta1.ReasonOwnerSpeakerDown)
	wantMessage(t, c, node, v1beta1.SpeakerLeasePrefix)
	e.waitEvent(e.ns, "web", v1beta1.ReasonOwnerSpeakerDown, node)

	e.speakerLease(node, 3600)
	c = e.waitCondition("web", v1beta1.ConditionAnnounced, metav1.ConditionTrue, "Announced")
	wantMessage(t, c, "answered by node "+node)

	e.report(node) // withdrawn
	e.waitCondition("web", v1beta1.ConditionAnnounced, metav1.ConditionUnknown, v1beta1.ReasonNotConfirmed)
}

// TestAnnouncedNamesTheNodeAfterFailover: the owner's speaker dies (its
// Lease expires); its stale report no longer counts: OwnerSpeakerDown
// naming it until the next node reports the address, then True naming
// that node.
func TestAnnouncedNamesTheNodeAfterFailover(t *testing.T) {
	e := newEnv(t)
	prefix := e.ns[:8] + "-"
	n1, n2 := prefix+"n1", prefix+"n2"
	e.nodes(n1, n2)
	e.pool("p", nil, "198.51.100.64/29")
	e.l2Everywhere("p")
	e.speakerLease(n1, 3600)
	e.speakerLease(n2, 3600)
	e.startController(controller.Options{})
	e.svc("web", nil)
	ip := e.waitAnyIPs("web", 1)[0]
	c := e.waitCondition("web", v1beta1.ConditionAnnounced, metav1.ConditionUnknown, v1beta1.ReasonNotConfirmed)
	m := regexp.MustCompile(`node (\S+) should answer it`).FindStringSubmatch(c.Message)
	if m == nil {
		t.Fatalf("no expected node in %q", c.Message)
	}
	owner, other := m[1], n1
	if owner == n1 {
		other = n2
	}
	// Another node's report (a hand-over not finished, a withdrawal not
	// yet written) confirms nothing.
	e.report(other, ip)
	e.eventually("NotConfirmed naming the other node's report", 20*time.Second, func() bool {
		c := svcCondition(e.get("web"), v1beta1.ConditionAnnounced)
		return c != nil && c.Status == metav1.ConditionUnknown && c.Reason == v1beta1.ReasonNotConfirmed &&
			strings.Contains(c.Message, "node "+owner+" should answer it (L2) and has not reported it yet (still reported by "+other+")")
	})
	e.report(owner, ip)
	c = e.waitCondition("web", v1beta1.ConditionAnnounced, metav1.ConditionTrue, "Announced")
	wantMessage(t, c, ip+" answered by node "+owner+" (L2; also still reported by "+other+")")
	e.report(other)
	e.eventually("the condition names the owner alone", 20*time.Second, func() bool {
		c := svcCondition(e.get("web"), v1beta1.ConditionAnnounced)
		return c != nil && c.Status == metav1.ConditionTrue && strings.HasSuffix(c.Message, ip+" answered by node "+owner+" (L2)")
	})

	e.speakerLease(owner, 1) // the owner's speaker dies: its report stays, its Lease expires
	c = e.waitCondition("web", v1beta1.ConditionAnnounced, metav1.ConditionFalse, v1beta1.ReasonOwnerSpeakerDown)
	wantMessage(t, c, "node "+owner+" has no live speaker", "node "+other+" should answer it")

	e.report(other, ip)
	c = e.waitCondition("web", v1beta1.ConditionAnnounced, metav1.ConditionTrue, "Announced")
	wantMessage(t, c, ip+" answered by node "+other+" (L2)")
	if strings.Contains(c.Message, owner) {
		t.Errorf("the dead speaker's stale report still counts: %s", c.Message)
	}
}

// TestAnnouncedConfirmedOverBGP: in BGP mode the condition names the
// nodes whose speakers report the prefix on an established session.
func TestAnnouncedConfirmedOverBGP(t *testing.T) {
	e := newEnv(t)
	prefix := e.ns[:8] + "-"
	nodes := []string{prefix + "n1", prefix + "n2", prefix + "n3"}
	e.nodes(nodes...)
	e.pool("p", nil, "198.51.100.64/29")
	h := e.herald.HeraldV1beta1()
	if _, err := h.BGPPeers().Create(e.ctx, &v1beta1.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: "tor"},
		Spec: v1beta1.BGPPeerSpec{MyASN: 64513, PeerASN: 64512, PeerAddress: "198.51.100.1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.BGPAdvertisements().Create(e.ctx, &v1beta1.BGPAdvertisement{ObjectMeta: metav1.ObjectMeta{Name: "all"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.startSpeakers(func() speaker.BGP { return &establishedBGP{} }, 100*time.Millisecond, nodes...)
	e.startController(controller.Options{})
	e.svc("web", nil)
	e.endpointsOn("web", nodes[0])
	// True from the first node that reports; the message follows the
	// others as they report.
	e.waitCondition("web", v1beta1.ConditionAnnounced, metav1.ConditionTrue, "Announced")
	want := "advertised over BGP by " + strings.Join(nodes, ", ")
	e.eventually("the condition names every node", 20*time.Second, func() bool {
		c := svcCondition(e.get("web"), v1beta1.ConditionAnnounced)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, want)
	})
}
