package controller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/controller/announced"
)

// Conditions of a Service's herald.dev/Announced as the controller
// computes them.
var (
	byN1      = condition{Type: v1beta1.ConditionAnnounced, Status: true, Reason: announce.ReasonAnnounced, Message: "198.51.100.64 answered by node n1 (L2)"}
	byN2      = condition{Type: v1beta1.ConditionAnnounced, Status: true, Reason: announce.ReasonAnnounced, Message: "198.51.100.64 answered by node n2 (L2)"}
	waitingN1 = condition{Type: v1beta1.ConditionAnnounced, Unknown: true, Reason: v1beta1.ReasonNotConfirmed, Message: "198.51.100.64: node n1 should answer it (L2) and has not reported it yet"}
	waitingN2 = condition{Type: v1beta1.ConditionAnnounced, Unknown: true, Reason: v1beta1.ReasonNotConfirmed, Message: "198.51.100.64: node n2 should answer it (L2) and has not reported it yet (still reported by n1)"}
	n1Down    = condition{Type: v1beta1.ConditionAnnounced, Reason: v1beta1.ReasonOwnerSpeakerDown, Message: "node n1 has no live speaker"}
)

// TestUpdatedLoadBalancerAcrossUnconfirmed: the Normal event
// UpdatedLoadBalancer follows a change of the announcing nodes also when
// the condition went through Unknown (a new owner not yet confirmed, the
// usual path of a hand-over in a cluster, where speakers report at most
// once a second) or False on the way, and only then.
func TestUpdatedLoadBalancerAcrossUnconfirmed(t *testing.T) {
	for _, tc := range []struct {
		name string
		// status is the Service's condition when the sequence starts
		// (a new leader, which remembers nothing, finds it there)
		status *condition
		steps  []condition
		want   []string // the reasons of the events, in order
	}{
		{name: "new Service", steps: []condition{waitingN1, byN1}},
		{name: "hand-over confirmed later", steps: []condition{byN1, waitingN2, byN2}, want: []string{"UpdatedLoadBalancer"}},
		{name: "hand-over confirmed at once", steps: []condition{byN1, byN2}, want: []string{"UpdatedLoadBalancer"}},
		{name: "same owner after a wait", steps: []condition{byN1, waitingN1, byN1}},
		{name: "owner's speaker down, then another", steps: []condition{byN1, n1Down, waitingN2, byN2}, want: []string{v1beta1.ReasonOwnerSpeakerDown, "UpdatedLoadBalancer"}},
		{name: "owner's speaker down and back", steps: []condition{byN1, n1Down, byN1}, want: []string{v1beta1.ReasonOwnerSpeakerDown}},
		{name: "new leader during a hand-over", status: &byN1, steps: []condition{waitingN2, byN2}, want: []string{"UpdatedLoadBalancer"}},
		{name: "new leader, hand-over already unconfirmed", status: &waitingN2, steps: []condition{byN2}},
		{name: "unchanged", steps: []condition{byN1, byN1, byN1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(100)
			c := &Controller{rec: rec, announced: announced.NewTracker()}
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 1}}
			write := func(w condition) { // the status write that precedes the events
				svc.Status.Conditions = []metav1.Condition{{Type: w.Type, Status: w.status(), Reason: w.Reason, Message: w.Message}}
			}
			if tc.status != nil {
				write(*tc.status)
			}
			for _, step := range tc.steps {
				c.announcementEvents(svc, step)
				write(step)
			}
			close(rec.Events)
			var got []string
			for ev := range rec.Events {
				got = append(got, strings.Fields(ev)[1]) // "Type Reason Message"
				if strings.Contains(ev, "UpdatedLoadBalancer") && !strings.Contains(ev, "node n2") {
					t.Errorf("event %q does not name the new owner n2", ev)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("events %q, want %q", got, tc.want)
			}
		})
	}
}

// TestForgottenAnnouncementStartsOver: a Service that lost its addresses
// (or was deleted) starts again without a last announcement.
func TestForgottenAnnouncementStartsOver(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	c := &Controller{rec: rec, announced: announced.NewTracker()}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
	c.announcementEvents(svc, byN1)
	c.announced.ForgetTrue(cache.MetaObjectToName(svc))
	c.announcementEvents(svc, byN2)
	if len(rec.Events) != 0 {
		t.Errorf("event %q after the announcement was forgotten", <-rec.Events)
	}
	if c.announced.Remembered() != 1 {
		t.Errorf("%d Services remembered, want 1", c.announced.Remembered())
	}
	c.announced.ForgetTrue(cache.MetaObjectToName(svc))
	if c.announced.Remembered() != 0 {
		t.Errorf("%d Services remembered after forgetting, want 0", c.announced.Remembered())
	}
}
