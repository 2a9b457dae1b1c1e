package speaker

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"

	heraldfake "github.com/herald-lb/herald/api/generated/clientset/versioned/fake"
	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/k8s/lean/leantest"
	"github.com/herald-lb/herald/internal/members"
)

func TestKeyMismatch(t *testing.T) {
	own := []string{"new"}
	peers := map[string][]string{
		"node3": {"old"},        // a key replaced in one step
		"node2": {"old", "new"}, // rotation step 1 there, sends with old
		"node4": {"new", "old"},
		"node5": {"new"},
	}
	if got := keyMismatch(own, peers); !slices.Equal(got, []string{"node2", "node3"}) {
		t.Errorf("mismatch %v, want [node2 node3] (sorted)", got)
	}
	if got := keyMismatch([]string{"old", "new"}, peers); !slices.Equal(got, []string{"node5"}) {
		t.Errorf("mismatch %v, want [node5]", got)
	}
	if got := keyMismatch(own, nil); len(got) != 0 {
		t.Errorf("no peers read: %v", got)
	}
}

func TestLeaseAnnotationsCarryTheKeys(t *testing.T) {
	r := &leaseRenewer{keys: "aa,bb"}
	got := r.annotations(map[string]string{"other": "x"})
	if got["herald.dev/memberlist-keys"] != "aa,bb" || got["other"] != "x" {
		t.Errorf("annotations %v", got)
	}
	r.keys = ""
	if got := r.annotations(map[string]string{"herald.dev/memberlist-keys": "aa", "other": "x"}); len(got) != 1 || got["other"] != "x" {
		t.Errorf("a speaker without keys removes the annotation: %v", got)
	}
	if got := r.annotations(nil); got != nil {
		t.Errorf("nothing to write: %v", got)
	}
}

// keyedMembers is a member list that names its keys.
type keyedMembers struct {
	fakeMembers
	keys []string
}

func (k *keyedMembers) KeyFingerprints() []string { return k.keys }

// TestSplitKeyReported: a speaker publishes its key fingerprints on its
// Lease; a live peer its member list does not hear, whose Lease shows a
// key this one cannot read, is counted, logged and reported in an Event.
func TestSplitKeyReported(t *testing.T) {
	now := metav1.NewMicroTime(time.Now())
	secs := int32(600)
	peer := "node2"
	kube := fake.NewClientset(
		node("node1", "198.51.100.11"), node("node2", "198.51.100.12"),
		&coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: LeaseName(peer), Namespace: testNS, Labels: map[string]string{leaseLabel: "true"},
				Annotations: map[string]string{v1beta1.AnnotationMemberlistKeys: "0ld0ld0ld0ld"}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &peer, LeaseDurationSeconds: &secs, RenewTime: &now},
		})
	ml := &keyedMembers{fakeMembers: fakeMembers{settled: true, states: map[string]members.State{"node1": members.Alive}}, keys: []string{"0e70e70e70e7"}}
	reg := prometheus.NewRegistry()
	rec := record.NewFakeRecorder(20)
	s, err := New(leantest.FromClientsets(kube, heraldfake.NewClientset(), testNS), Options{NodeName: "node1", Namespace: testNS,
		LeaseRenew: 100 * time.Millisecond, Registerer: reg, Recorder: rec,
		StartMembers: func(context.Context, corelisters.SecretNamespaceLister) (Liveness, error) { return ml, nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	poll(t, "own Lease with the key fingerprints", func() bool {
		l, err := kube.CoordinationV1().Leases(testNS).Get(ctx, LeaseName("node1"), metav1.GetOptions{})
		return err == nil && l.Annotations[v1beta1.AnnotationMemberlistKeys] == "0e70e70e70e7"
	})
	poll(t, "herald_speaker_member_key_mismatch 1", func() bool {
		return testutil.ToFloat64(s.metrics.keyMismatch) == 1
	})
	poll(t, "a MemberlistKeyMismatch Event naming node2", func() bool {
		select {
		case ev := <-rec.Events:
			return strings.Contains(ev, ReasonMemberlistKeyMismatch) && strings.Contains(ev, "node2")
		default:
			return false
		}
	})
	// The peer restarted with this speaker's key: no mismatch.
	l, err := kube.CoordinationV1().Leases(testNS).Get(ctx, LeaseName(peer), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Annotations[v1beta1.AnnotationMemberlistKeys] = "0e70e70e70e7"
	if _, err := kube.CoordinationV1().Leases(testNS).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "herald_speaker_member_key_mismatch 0", func() bool {
		return testutil.ToFloat64(s.metrics.keyMismatch) == 0
	})
}
