package leader_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-lb/herald/internal/leader"
	"github.com/herald-lb/herald/test/labkit"
	"github.com/herald-lb/herald/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// write is one write a replica sent to the API server: from just before
// it was sent to when its answer (or its failure) came back. A write that
// failed on the client side may still have been applied, so every sent
// write counts.
type write struct {
	replica    string
	start, end time.Time
}

// writeLog collects the writes of every replica.
type writeLog struct {
	mu     sync.Mutex
	writes []write
}

func (l *writeLog) add(w write) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes = append(l.writes, w)
}

// handOver returns, for a hand-over from old to next, the end of old's
// last write and the start of next's first write after since.
func (l *writeLog) handOver(old, next string, since time.Time) (oldLast, nextFirst time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range l.writes {
		switch {
		case w.replica == old && w.end.After(oldLast):
			oldLast = w.end
		case w.replica == next && w.start.After(since) && (nextFirst.IsZero() || w.start.Before(nextFirst)):
			nextFirst = w.start
		}
	}
	return oldLast, nextFirst
}

func (l *writeLog) wrote(replica string, since time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range l.writes {
		if w.replica == replica && w.start.After(since) {
			return true
		}
	}
	return false
}

// leaseCut is a client transport that, once cut, holds every request for
// a Lease until the request gives up: the replica's renewals stall while
// its other writes still reach the API server, the case where a leader
// could go on writing after it lost the Lease.
type leaseCut struct {
	next http.RoundTripper
	cut  atomic.Bool
}

func (c *leaseCut) RoundTrip(r *http.Request) (*http.Response, error) {
	if c.cut.Load() && strings.Contains(r.URL.Path, "/leases") {
		<-r.Context().Done()
		return nil, fmt.Errorf("lease traffic cut by the test: %w", r.Context().Err())
	}
	return c.next.RoundTrip(r)
}

// replica is one contender for the Lease, running in this process.
type replica struct {
	name string
	cut  *leaseCut
	stop context.CancelFunc
	done chan error
}

// TestLeaderHandOverGap measures the worst gap between the last write of
// a leader whose Lease renewals stall (its other API traffic still flows)
// and the first write of its successor, and fails if the two ever
// overlap. Each replica writes as fast as its Fence lets it, so the gap is
// the window in which nobody writes.
func TestLeaderHandOverGap(t *testing.T) {
	cp := testenv.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin, err := kubernetes.NewForConfig(cp.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	const ns = "default"
	if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "handover-writes"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	applied := watchWriters(ctx, t, admin, ns, "handover-writes")
	opts := leader.Options{Namespace: ns, Name: "handover-gap", LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 250 * time.Millisecond}
	log := &writeLog{}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	started := 0
	start := func() *replica {
		started++
		r := &replica{name: fmt.Sprintf("replica-%d", started), done: make(chan error, 1)}
		cfg := *cp.AdminConfig
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
			r.cut = &leaseCut{next: rt}
			return r.cut
		}
		cs, err := kubernetes.NewForConfig(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		rctx, stop := context.WithCancel(ctx)
		r.stop = stop
		o := opts
		o.Identity = r.name
		go func() {
			r.done <- leader.Run(rctx, cs, o, quiet, func(ctx context.Context, f *leader.Fence) error {
				return writeUnderFence(ctx, cs, f, ns, r.name, log)
			})
		}()
		return r
	}
	replicas := map[string]*replica{}
	for range 2 {
		r := start()
		replicas[r.name] = r
	}
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	var gaps []time.Duration
	var handOvers [][2]string // old, next
	for round := 0; round < rounds; round++ {
		leader := waitForWriter(t, log, replicas, time.Now(), 60*time.Second)
		// Let the leader write for a moment, then stall its renewals.
		time.Sleep(time.Duration(100+round*37) * time.Millisecond)
		cutAt := time.Now()
		old := replicas[leader]
		old.cut.cut.Store(true)
		delete(replicas, leader)
		next := waitForWriter(t, log, replicas, cutAt, 60*time.Second)
		// The stalled leader gives up at its renew deadline and returns.
		select {
		case err := <-old.done:
			if err != nil {
				t.Errorf("%s: %v", leader, err)
			}
		case <-time.After(60 * time.Second):
			// 60 s: longer than the end-to-end lab's 20 s CPU saturation,
			// beside which make test runs these tests at a 256th of the
			// lab's CPU weight (internal/controller's minWait)
			t.Fatalf("%s still runs 60 s after its renewals stalled", leader)
		}
		old.stop()
		oldLast, nextFirst := log.handOver(leader, next, cutAt)
		gap := nextFirst.Sub(oldLast)
		t.Logf("round %d: %s's renewals stalled; its last write ended %v after, %s's first began %v after: gap %v",
			round+1, leader, oldLast.Sub(cutAt).Round(time.Millisecond), next, nextFirst.Sub(cutAt).Round(time.Millisecond), gap.Round(time.Millisecond))
		gaps = append(gaps, gap)
		handOvers = append(handOvers, [2]string{leader, next})
		r := start()
		replicas[r.name] = r
	}
	for _, r := range replicas {
		r.stop()
		if err := <-r.done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v", r.name, err)
		}
	}
	// Overlap is judged in the order the API server applied the writes,
	// which no scheduling delay in this process can blur; the client-side
	// gap above is the figure.
	order := applied.writers()
	for _, h := range handOvers {
		firstNext, lastOld := slices.Index(order, h[1]), lastIndex(order, h[0])
		if firstNext < 0 || lastOld < 0 {
			t.Errorf("the watch saw no write of %s or %s (%d writes seen)", h[0], h[1], len(order))
		} else if lastOld > firstNext {
			t.Errorf("the API server applied a write of %s after the first of its successor %s: two leaders wrote at once", h[0], h[1])
		}
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	t.Logf("hand-over gap over %d rounds (lease %v, renew deadline %v, retry %v): shortest %v, longest %v; the fence's margin is lease − renew deadline = %v",
		len(gaps), opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod, gaps[0].Round(time.Millisecond), gaps[len(gaps)-1].Round(time.Millisecond), opts.LeaseDuration-opts.RenewDeadline)
}

// waitForWriter returns the first of replicas seen writing after since.
func waitForWriter(t *testing.T, log *writeLog, replicas map[string]*replica, since time.Time, within time.Duration) string {
	t.Helper()
	var writer string
	labkit.Eventually(t, within, fmt.Sprintf("one of %d replicas writing", len(replicas)), func() bool {
		for name := range replicas {
			if log.wrote(name, since) {
				writer = name
				return true
			}
		}
		return false
	})
	return writer
}

// writeUnderFence writes to a ConfigMap as fast as it can, each write
// under the fence, recording every write it sent, until ctx ends.
func writeUnderFence(ctx context.Context, cs kubernetes.Interface, f *leader.Fence, ns, name string, log *writeLog) error {
	for seq := 0; ctx.Err() == nil; seq++ {
		// A new value every time: every applied write is a watch event.
		patch := []byte(fmt.Sprintf(`{"data":{"writer":%q,"seq":"%d"}}`, name, seq))
		wctx, cancel, err := f.Check(ctx)
		if err != nil {
			time.Sleep(5 * time.Millisecond) // the fence is closed: wait for the elector
			continue
		}
		w := write{replica: name, start: time.Now()}
		_, _ = cs.CoreV1().ConfigMaps(ns).Patch(wctx, "handover-writes", types.MergePatchType, patch, metav1.PatchOptions{})
		w.end = time.Now()
		cancel()
		log.add(w)
	}
	return nil
}

// appliedWriters is the writer of every write the API server applied to
// one ConfigMap, in the order it applied them.
type appliedWriters struct {
	mu    sync.Mutex
	order []string
}

func (a *appliedWriters) writers() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.order)
}

// watchWriters records, until ctx ends, the "writer" of every change of
// ConfigMap ns/name from now on.
func watchWriters(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) *appliedWriters {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + name, ResourceVersion: cm.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	a := &appliedWriters{}
	go func() {
		for ev := range w.ResultChan() {
			if c, ok := ev.Object.(*corev1.ConfigMap); ok {
				a.mu.Lock()
				a.order = append(a.order, c.Data["writer"])
				a.mu.Unlock()
			}
		}
	}()
	return a
}

// lastIndex is the index of the last v in s, or -1.
func lastIndex(s []string, v string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == v {
			return i
		}
	}
	return -1
}
