package speaker

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"

	heraldfake "github.com/herald-lb/herald/api/generated/clientset/versioned/fake"
	"github.com/herald-lb/herald/internal/k8s"
	"github.com/herald-lb/herald/internal/k8s/lean/leantest"
	"github.com/herald-lb/herald/test/labkit"
)

// TestUnsyncedSpeakerNeverJoins: a speaker whose caches cannot sync (its
// RBAC for EndpointSlices removed) never starts its member list, renews no
// Lease and is not Ready; once the list works it starts the member list,
// renews its Lease and turns Ready.
func TestUnsyncedSpeakerNeverJoins(t *testing.T) {
	kube := fake.NewClientset()
	var allow atomic.Bool
	var attempts atomic.Int32
	kube.PrependReactor("list", "endpointslices", func(k8stesting.Action) (bool, runtime.Object, error) {
		if allow.Load() {
			return false, nil, nil
		}
		attempts.Add(1)
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "discovery.k8s.io", Resource: "endpointslices"}, "", errors.New("RBAC"))
	})
	var started atomic.Bool
	ml := &fakeMembers{settled: true}
	s, err := New(leantest.FromClientsets(kube, heraldfake.NewClientset(), testNS), Options{NodeName: "node1", Namespace: testNS,
		StartMembers: func(context.Context, corelisters.SecretNamespaceLister) (Liveness, error) {
			started.Store(true)
			return ml, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	poll(t, "the EndpointSlice list refused twice", func() bool { return attempts.Load() >= 2 })
	if started.Load() || s.Ready() || s.liveness.live("node1") {
		t.Fatalf("unsynced speaker: member list started %v, Ready %v, alive %v", started.Load(), s.Ready(), s.liveness.live("node1"))
	}
	if l, _ := kube.CoordinationV1().Leases(testNS).List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Fatalf("unsynced speaker wrote Leases: %v", l.Items)
	}
	allow.Store(true) // RBAC restored
	poll(t, "member list started and Ready", func() bool { return started.Load() && s.Ready() })
	poll(t, "Lease renewed", func() bool {
		l, err := kube.CoordinationV1().Leases(testNS).Get(ctx, LeaseName("node1"), metav1.GetOptions{})
		return err == nil && k8s.LeaseFresh(l, time.Now())
	})
}

// poll waits up to 60 s for cond: make test runs this package beside the
// end-to-end lab, which can leave it almost no CPU for 20 s (see
// internal/controller's minWait).
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	labkit.Eventually(t, 60*time.Second, what, cond)
}
