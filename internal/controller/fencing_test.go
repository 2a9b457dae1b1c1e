package controller_test

import (
	"fmt"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/herald-lb/herald/test/labkit"
)

// momentWatch follows every Service's status through a watch and checks,
// at every event, that no address is shown by two Services at that moment
// and that no Service ever shows a second address (nothing in these tests
// edits a Service's spec).
type momentWatch struct {
	mu         sync.Mutex
	now        map[string][]string        // Service -> addresses it shows now
	seen       map[string]map[string]bool // Service -> every address it showed
	duplicates []string
}

func (e *env) watchMoments() *momentWatch {
	e.t.Helper()
	w, err := e.kube.CoreV1().Services(e.ns).Watch(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	mw := &momentWatch{now: map[string][]string{}, seen: map[string]map[string]bool{}}
	go func() {
		for ev := range w.ResultChan() {
			s, ok := ev.Object.(*corev1.Service)
			if !ok {
				continue
			}
			mw.observe(s, ev.Type == watch.Deleted)
		}
	}()
	e.t.Cleanup(w.Stop)
	return mw
}

func (mw *momentWatch) observe(s *corev1.Service, deleted bool) {
	mw.mu.Lock()
	defer mw.mu.Unlock()
	if deleted {
		delete(mw.now, s.Name)
		return
	}
	mw.now[s.Name] = ips(s)
	for _, ip := range mw.now[s.Name] {
		if mw.seen[s.Name] == nil {
			mw.seen[s.Name] = map[string]bool{}
		}
		mw.seen[s.Name][ip] = true
		for other, theirs := range mw.now {
			for _, o := range theirs {
				if other != s.Name && o == ip {
					mw.duplicates = append(mw.duplicates, fmt.Sprintf("%s shown by %s and %s at resourceVersion %s", ip, other, s.Name, s.ResourceVersion))
				}
			}
		}
	}
}

func (mw *momentWatch) problems() (dups, moved []string) {
	mw.mu.Lock()
	defer mw.mu.Unlock()
	for name, all := range mw.seen {
		if len(all) > 1 {
			moved = append(moved, fmt.Sprintf("%s: %v", name, all))
		}
	}
	sort.Strings(moved)
	return append([]string(nil), mw.duplicates...), moved
}

// A leader paused past its lease (SIGSTOP) while Services are created
// resumes with a stale view; its writes must fail, never win: no address
// is ever shown by two Services, none moves.
func TestPausedLeaderNeverWins(t *testing.T) {
	e := newEnv(t)
	_ = e.kube.CoordinationV1().Leases(heraldNS).Delete(e.ctx, "herald-controller", metav1.DeleteOptions{})
	e.pool("p", nil, "198.51.100.0/25")
	mw := e.watchMoments()
	leaseArgs := []string{"--leader-elect=true", "--lease-duration=2s", "--renew-deadline=1500ms", "--retry-period=250ms", "--release-hold=0s"}
	procs := map[string]*labkit.Process{}
	started := 0
	start := func() {
		name := fmt.Sprintf("replica-%d", started)
		started++
		procs[name] = e.startBinary(name, leaseArgs...)
	}
	start()
	start()
	// On a busy machine a leader can miss its 1.5 s renew deadline: it
	// then exits, as it must, and its Deployment would start another.
	// So does the test, for every replica but the paused one (which
	// cannot exit while stopped), instead of waiting for a replica that
	// is gone.
	replaceExited := func(paused string) {
		for name, p := range procs {
			if name == paused {
				continue
			}
			select {
			case <-p.Done():
				t.Logf("%s exited (it lost the Lease: a renewal missed its deadline); a fresh replica replaces it", name)
				delete(procs, name)
				start()
			default:
			}
		}
	}
	waitAssigned := func(paused string) {
		e.eventually("every Service to have its addresses", 60*time.Second, func() bool {
			replaceExited(paused)
			return e.allAssigned(func(string) int { return 1 })
		})
	}
	rounds := 20 // as the issue asks; about 85 s
	if testing.Short() {
		rounds = 2
	}
	n := 0
	create := func(k int) (done chan struct{}) {
		base := n
		n += k
		done = make(chan struct{})
		go func() {
			defer close(done)
			e.createMany(k, func(i int) string { return fmt.Sprintf("s-%03d", base+i) }, nil)
		}()
		return done
	}
	<-create(4)
	waitAssigned("")
	began := time.Now()
	for round := 0; round < rounds; round++ {
		e.eventually("a replica to lead", minWait, func() bool { replaceExited(""); return procs[e.leaseHolder()] != nil })
		leaderName := e.leaseHolder()
		leader := procs[leaderName]
		// Mid-work: Services arrive, and the leader stops while it writes.
		during := create(3)
		time.Sleep(time.Duration(round*40) * time.Millisecond)
		if err := leader.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		paused := time.Now()
		e.eventually("another replica to take the Lease", minWait, func() bool {
			replaceExited(leaderName)
			h := e.leaseHolder()
			return h != "" && h != leaderName
		})
		<-during
		<-create(3)
		waitAssigned(leaderName)
		if time.Since(paused) < 2500*time.Millisecond {
			time.Sleep(2500*time.Millisecond - time.Since(paused)) // well past the lease
		}
		if err := leader.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		// The old leader finds it lost the Lease and exits; a fresh
		// replica takes its place.
		select {
		case <-leader.Done():
		case <-time.After(minWait):
			t.Fatalf("the paused leader %s did not exit within %s after it resumed", leaderName, minWait)
		}
		delete(procs, leaderName)
		start()
		waitAssigned("")
	}
	e.settleTending("p", func() { replaceExited("") })
	t.Logf("%d rounds of pausing the leader past its 2 s lease in %s; %d Services", rounds, time.Since(began).Round(time.Second), n)
	dups, moved := mw.problems()
	if len(dups) > 0 {
		t.Errorf("addresses shown by two Services at one moment: %v", dups)
	}
	if len(moved) > 0 {
		t.Errorf("Services whose address changed without a spec change: %v", moved)
	}
}
