package leader

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Options configure Lease leader election.
type Options struct {
	Namespace, Name, Identity string
	// LeaseDuration, RenewDeadline, RetryPeriod: defaults 15 s, 10 s, 2 s
	// (client-go's, used by kube-controller-manager).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// OnLeading reports leadership changes (for the leader metric).
	OnLeading func(bool)
}

// ErrNotLeader is returned by Fence.Check once this replica's lease may
// have expired.
var ErrNotLeader = errors.New("not the leader: the lease was not renewed in time")

// Fence tells the leader's work until when it may write. A lease renewal
// that started at time t keeps the lease ours until at least t +
// LeaseDuration in every other replica's eyes (they count from when they
// see the renewal, which is later); the fence closes earlier, at t +
// RenewDeadline, so that a leader paused past its lease (GC, VM stall,
// SIGSTOP) stops writing before a new leader can start.
type Fence struct {
	mu      sync.Mutex
	until   time.Time
	renewal time.Duration
}

// Check returns a context that ends when the fence closes, or ErrNotLeader
// when it is closed already. Writes should run under that context, so
// that a write delayed past the lease is abandoned.
func (f *Fence) Check(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if f == nil {
		ctx, cancel := context.WithCancel(ctx)
		return ctx, cancel, nil // no leader election: always allowed
	}
	f.mu.Lock()
	until := f.until
	f.mu.Unlock()
	if !time.Now().Before(until) {
		return ctx, func() {}, ErrNotLeader
	}
	ctx, cancel := context.WithDeadline(ctx, until)
	return ctx, cancel, nil
}

func (f *Fence) renewed(started time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if u := started.Add(f.renewal); u.After(f.until) {
		f.until = u
	}
}

func (f *Fence) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.until = time.Time{}
}

// fencedLock records, for the fence, when each successful renewal of our
// own Lease started.
type fencedLock struct {
	resourcelock.Interface
	fence *Fence
}

func (l *fencedLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	start := time.Now()
	err := l.Interface.Create(ctx, r)
	if err == nil && r.HolderIdentity == l.Identity() {
		l.fence.renewed(start)
	}
	return err
}

func (l *fencedLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	start := time.Now()
	err := l.Interface.Update(ctx, r)
	if err == nil && r.HolderIdentity == l.Identity() {
		l.fence.renewed(start)
	}
	return err
}

// Run blocks until this process holds the Lease, then runs work
// with a context that ends when leadership is lost or ctx ends, and a
// Fence every write must pass. It returns work's error once work has
// returned; when ctx ended (not when leadership was lost) it then releases
// the Lease, so a successor takes over at once. It never releases the
// Lease while work still runs. The caller should exit afterwards, as
// kube-controller-manager does, rather than go on unguarded.
func Run(ctx context.Context, cs kubernetes.Interface, o Options, log *slog.Logger, work func(context.Context, *Fence) error) error {
	if o.LeaseDuration == 0 {
		o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 15*time.Second, 10*time.Second, 2*time.Second
	}
	fence := &Fence{renewal: o.RenewDeadline}
	lock := &fencedLock{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity},
	}, fence: fence}
	notify := func(b bool) {
		if o.OnLeading != nil {
			o.OnLeading(b)
		}
	}
	var workErr error
	workDone := make(chan struct{})
	started := false
	var startedMu sync.Mutex
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: o.Name, ReleaseOnCancel: false, // released below, after work returned
		LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				startedMu.Lock()
				started = true
				startedMu.Unlock()
				defer close(workDone)
				log.Info("became leader", "lease", o.Namespace+"/"+o.Name, "identity", o.Identity)
				notify(true)
				workErr = work(ctx, fence)
			},
			OnStoppedLeading: func() {
				fence.close()
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
	startedMu.Lock()
	wasLeading := started
	startedMu.Unlock()
	if !wasLeading {
		return nil
	}
	<-workDone
	if ctx.Err() != nil {
		release(lock, o, fence, log)
	}
	return workErr
}

// release hands the Lease over (as client-go's ReleaseOnCancel does) once
// the work has stopped, if it is still ours and not expired.
func release(lock *fencedLock, o Options, fence *Fence, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), o.RenewDeadline)
	defer cancel()
	rec, _, err := lock.Get(ctx)
	if err != nil || rec.HolderIdentity != o.Identity {
		return
	}
	now := metav1.NewTime(time.Now())
	if err := lock.Interface.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions: rec.LeaderTransitions, LeaseDurationSeconds: 1,
		RenewTime: now, AcquireTime: now,
	}); err != nil {
		log.Warn("releasing the Lease", "error", err)
		return
	}
	fence.close()
	log.Info("released the Lease", "lease", o.Namespace+"/"+o.Name)
}
