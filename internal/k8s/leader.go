package k8s

import (
	"context"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaderOptions configure Lease leader election.
type LeaderOptions struct {
	Namespace, Name, Identity string
	// LeaseDuration, RenewDeadline, RetryPeriod: defaults 15 s, 10 s, 2 s
	// (client-go's, used by kube-controller-manager).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// OnLeading reports leadership changes (for the leader metric).
	OnLeading func(bool)
}

// RunAsLeader blocks until this process holds the Lease, then runs work
// with a context that ends when leadership is lost or ctx ends. It returns
// when work returns or leadership is lost; the caller should then exit, as
// kube-controller-manager does, rather than go on unguarded.
func RunAsLeader(ctx context.Context, cs kubernetes.Interface, o LeaderOptions, log *slog.Logger, work func(context.Context)) error {
	if o.LeaseDuration == 0 {
		o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 15*time.Second, 10*time.Second, 2*time.Second
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity},
	}
	notify := func(b bool) {
		if o.OnLeading != nil {
			o.OnLeading(b)
		}
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: o.Name, ReleaseOnCancel: true,
		LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				log.Info("became leader", "lease", o.Namespace+"/"+o.Name, "identity", o.Identity)
				notify(true)
				work(ctx)
			},
			OnStoppedLeading: func() {
				log.Info("stopped leading", "lease", o.Namespace+"/"+o.Name, "identity", o.Identity)
				notify(false)
			},
			OnNewLeader: func(id string) {
				if id != o.Identity {
					log.Info("another replica leads", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return err
	}
	le.Run(ctx)
	return nil
}
