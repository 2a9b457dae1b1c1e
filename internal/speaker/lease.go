package speaker

import (
	"context"
	"fmt"
	"maps"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/k8s/lean"
)

// The liveness Lease: every synced speaker renews a Lease named
// herald-speaker-<node> in Herald's namespace, the way the kubelet renews
// its node Lease. It is the second source of liveness, for nodes no
// member has seen (a new node whose speaker is still starting; the deaths
// other members saw come with the member list itself) and for a node cut
// off from every other member. It is written by the speaker itself, not by the kubelet,
// so a dead kubelet does not make a live speaker look dead.
const (
	// LeasePrefix starts the name of every speaker liveness Lease.
	LeasePrefix = v1beta1.SpeakerLeasePrefix
	// leaseLabel marks the liveness Leases (their list is selected by it).
	leaseLabel = v1beta1.LabelSpeakerLiveness
	// DefaultLeaseRenew is how often a speaker renews its Lease; the Lease
	// lasts three renewals.
	DefaultLeaseRenew = 5 * time.Second
)

// LeaseName returns the name of a node's speaker liveness Lease.
func LeaseName(node string) string { return LeasePrefix + node }

// leaseRenewer keeps this node's Lease renewed: one write (an Update of
// the Lease it last wrote) per renewal, a Get or Create only at start or
// after a failed write.
type leaseRenewer struct {
	leases   lean.LeaseClient
	node     string
	duration time.Duration
	now      func() time.Time
	last     *coordinationv1.Lease
	// keys, when set, is written to the Lease as its
	// v1beta1.AnnotationMemberlistKeys (the member list's key
	// fingerprints): set before run starts.
	keys string
}

func (r *leaseRenewer) renew(ctx context.Context) error {
	now := metav1.NewMicroTime(r.now())
	secs := int32(r.duration.Round(time.Second) / time.Second)
	if r.last == nil {
		l, err := r.leases.Get(ctx, LeaseName(r.node), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			l = &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: LeaseName(r.node), Labels: map[string]string{leaseLabel: "true"}, Annotations: r.annotations(nil)},
				Spec:       coordinationv1.LeaseSpec{HolderIdentity: &r.node, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
			}
			created, err := r.leases.Create(ctx, l, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("create Lease %s: %w", l.Name, err)
			}
			r.last = created
			return nil
		case err != nil:
			return fmt.Errorf("get Lease %s: %w", LeaseName(r.node), err)
		}
		r.last = l
	}
	l := r.last.DeepCopy()
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &r.node, &secs, &now
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[leaseLabel] = "true"
	l.Annotations = r.annotations(l.Annotations)
	updated, err := r.leases.Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		r.last = nil
		return fmt.Errorf("renew Lease %s: %w", l.Name, err)
	}
	r.last = updated
	return nil
}

// annotations returns a Lease's annotations with the key fingerprints
// set (removed when there are none).
func (r *leaseRenewer) annotations(cur map[string]string) map[string]string {
	if r.keys == "" && cur[v1beta1.AnnotationMemberlistKeys] == "" {
		return cur
	}
	out := maps.Clone(cur)
	if out == nil {
		out = map[string]string{}
	}
	if r.keys == "" {
		delete(out, v1beta1.AnnotationMemberlistKeys)
	} else {
		out[v1beta1.AnnotationMemberlistKeys] = r.keys
	}
	return out
}

// release deletes the Lease (at shutdown, once the addresses moved).
func (r *leaseRenewer) release(ctx context.Context) error {
	err := r.leases.Delete(ctx, LeaseName(r.node), metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// run renews every interval until ctx ends, telling done each renewal's
// outcome (nil: renewed).
func (r *leaseRenewer) run(ctx context.Context, interval time.Duration, done func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := r.renew(ctx); ctx.Err() == nil {
			done(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
