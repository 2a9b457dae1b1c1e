package l2

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"

	heraldv1 "github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/lab"
)

// leaseRenewEvery is how often leaseKeeper renews a Lease: well inside
// the speakers' Lease duration (three of their 5 s renewals).
const leaseRenewEvery = time.Second

// leaseKeeper renews a node's speaker liveness Lease in that speaker's
// place, as the speaker would have just before it died, so that a test
// can hold open the window in which the Lease still looks fresh. It
// records whether the Lease stayed fresh without a break from its first
// read until stop.
type leaseKeeper struct {
	done     chan struct{}
	finished chan struct{}

	mu sync.Mutex
	// fresh is when the Lease, as last renewed, runs out.
	fresh time.Time
	// broken, when set, says when and how the Lease ran out.
	broken error
	count  int
}

// keepLeaseFresh starts renewing node's speaker Lease; the Lease must
// exist and be fresh now.
func keepLeaseFresh(t *testing.T, l *lab.Lab, node string) *leaseKeeper {
	t.Helper()
	leases := l.Client().CoordinationV1().Leases(deploy.Namespace)
	name := heraldv1.SpeakerLeasePrefix + node
	ctx := context.Background()
	first, err := leases.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Lease %s: %v", name, err)
	}
	if first.Spec.RenewTime == nil || first.Spec.LeaseDurationSeconds == nil {
		t.Fatalf("Lease %s has no renew time or duration: %+v", name, first.Spec)
	}
	duration := time.Duration(*first.Spec.LeaseDurationSeconds) * time.Second
	k := &leaseKeeper{done: make(chan struct{}), finished: make(chan struct{}), fresh: first.Spec.RenewTime.Add(duration)}
	if now := time.Now(); k.fresh.Before(now) {
		t.Fatalf("Lease %s ran out at %v, before the test renews it", name, k.fresh)
	}
	go func() {
		defer close(k.finished)
		for {
			select {
			case <-k.done:
				return
			case <-time.After(leaseRenewEvery):
			}
			k.renew(ctx, leases, name, duration)
		}
	}()
	t.Cleanup(func() { _ = k.stop() })
	return k
}

// renew writes the Lease's renew time once; a failed write is retried at
// the next tick, and a break is recorded when the Lease ran out first.
func (k *leaseKeeper) renew(ctx context.Context, leases coordinationv1.LeaseInterface, name string, duration time.Duration) {
	cur, err := leases.Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		now := metav1.NewMicroTime(time.Now())
		cur.Spec.RenewTime = &now
		_, err = leases.Update(ctx, cur, metav1.UpdateOptions{})
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	at := time.Now()
	if k.broken == nil && at.After(k.fresh) {
		k.broken = fmt.Errorf("Lease %s ran out at %v, renewed only at %v", name, k.fresh.Format(time.RFC3339Nano), at.Format(time.RFC3339Nano))
	}
	if err != nil {
		return
	}
	k.fresh = at.Add(duration)
	k.count++
}

// stop ends the renewals and says whether the Lease ran out meanwhile.
func (k *leaseKeeper) stop() error {
	select {
	case <-k.done:
	default:
		close(k.done)
	}
	<-k.finished
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.broken
}

// freshUntil is when the Lease, as last renewed, runs out.
func (k *leaseKeeper) freshUntil() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.fresh
}

// renewals is how many times the keeper renewed the Lease.
func (k *leaseKeeper) renewals() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.count
}
