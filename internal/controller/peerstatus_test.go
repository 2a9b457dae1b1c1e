package controller_test

import (
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/controller"
)

// TestPeerSessionsConfigured: a node whose speaker refuses a BGPPeer's
// session (here: the node lacks the peer's VRF) turns the BGPPeer's
// SessionsConfigured condition False, naming the node and why; once the
// node configures it, the condition is True again.
func TestPeerSessionsConfigured(t *testing.T) {
	e := newEnv(t)
	if _, err := e.herald.HeraldV1beta1().BGPPeers().Create(e.ctx, &v1beta1.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: "tenant"},
		Spec: v1beta1.BGPPeerSpec{MyASN: 64513, PeerASN: 64512, PeerAddress: "198.51.100.209", VRF: "blue"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.startController(controller.Options{})
	condition := func(status metav1.ConditionStatus, fragment string) func() bool {
		return func() bool {
			p, err := e.herald.HeraldV1beta1().BGPPeers().Get(e.ctx, "tenant", metav1.GetOptions{})
			if err != nil {
				return false
			}
			for _, c := range p.Status.Conditions {
				if c.Type == v1beta1.ConditionSessionsConfigured && c.Status == status && strings.Contains(c.Message, fragment) {
					return true
				}
			}
			return false
		}
	}
	e.eventually("SessionsConfigured True", 20*time.Second, condition(metav1.ConditionTrue, "no node refused"))
	msg := "VRF blue does not exist on node node2"
	reportSession(e, "node2", v1beta1.BGPSessionStatus{Peer: "tenant", State: "NotConfigured", Message: msg})
	e.eventually("SessionsConfigured False", 20*time.Second, condition(metav1.ConditionFalse, "node2: "+msg))
	reportSession(e, "node2", v1beta1.BGPSessionStatus{Peer: "tenant", State: "Active"})
	e.eventually("SessionsConfigured True again", 20*time.Second, condition(metav1.ConditionTrue, "no node refused"))
}

// reportSession writes node's SpeakerStatus with one BGP session.
func reportSession(e *env, node string, s v1beta1.BGPSessionStatus) {
	e.t.Helper()
	st := v1beta1.SpeakerStatusStatus{Pod: "speaker-" + node, Summary: v1beta1.SpeakerSummary{Sessions: "0/1"}, BGP: []v1beta1.BGPSessionStatus{s}}
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
