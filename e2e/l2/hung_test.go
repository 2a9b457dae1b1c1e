package l2

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// hungAddrs are the addresses of the Node objects whose member list
// accepts connections and never answers (on the client, outside the
// address plan's ranges in use): more than a speaker joins at a time
// after its start (four, before every join of its first round ran at
// once).
var hungAddrs = []string{"198.51.100.110", "198.51.100.111", "198.51.100.112",
	"198.51.100.113", "198.51.100.114", "198.51.100.115"}

// TestRestartBesideHungMemberAddresses restarts a speaker while Node
// objects name addresses that accept the member list's connections and
// never answer (a hung speaker, something else on the port): each join
// of one holds for the member list's stream timeout, and the restarted
// speaker must take its share back all the same within the targets of a
// hand-over (checkHandOvers: 12 addresses probed every 20 ms), its
// start bounded by the greeting (internal/members, joiner.start). The
// others start their release grace when they first see it alive; when
// its start waited for every join, four at a time, it settled two
// stream timeouts later, past the grace.
func TestRestartBesideHungMemberAddresses(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	vips := services(t, l, "hung", 6)
	accepted := hangMemberAddresses(t, l, hungAddrs)
	restarted := harness.Owner(t, l, vips[0])
	node, err := l.Node(restarted)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.HoldSpeaker(ctx, restarted); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.ReleaseSpeaker(context.Background(), restarted) })
	for _, vip := range vips {
		labkit.Eventually(t, 30*time.Second, fmt.Sprintf("%s answered while %s has no speaker", vip, restarted), func() bool {
			a := harness.Probe(t, l, vip)
			return len(a) == 1 && a[0].Node != restarted
		})
	}
	mons := monitorEvery(t, l, vips, probeRound)
	controls, cmons := startControls(t, l)
	start := time.Now()
	if err := h.ReleaseSpeaker(ctx, restarted); err != nil {
		stopMonitors(mons)
		stopMonitors(cmons)
		t.Fatal(err)
	}
	t.Logf("%s's speaker Ready %v after its release", restarted, time.Since(start).Round(time.Millisecond))
	_, _ = mons[0].Wait(ctx, time.Now().Add(4*time.Second), func(lab.Probe) bool { return true })
	checkHandOvers(t, restarted+"'s speaker starting beside hung member addresses", vips, mons, controls, cmons, start)
	if n := accepted(node.IPv4, start); n < len(hungAddrs) {
		t.Errorf("%s's speaker connected to the hung addresses %d times since its release, want at least %d", restarted, n, len(hungAddrs))
	}
	var taken int
	for _, vip := range vips {
		if a := harness.Probe(t, l, vip); len(a) == 1 && a[0].Node == restarted {
			taken++
		}
	}
	t.Logf("%s answers for %d of %d addresses after its start", restarted, taken, len(vips))
	for _, line := range strings.Split(h.LogsSince(ctx, start, 5000), "\n") {
		if strings.Contains(line, "member list settled") {
			t.Log(line)
		}
	}
}

// hangMemberAddresses gives the client the addresses addrs, listens on
// the member list's port there, accepting every connection and never
// answering, and creates a Node object for each address, so that every
// speaker joins it. All of it is undone when the test ends. It returns
// how many connections came from an address since a time.
func hangMemberAddresses(t *testing.T, l *lab.Lab, addrs []string) func(from netip.Addr, since time.Time) int {
	t.Helper()
	ctx := context.Background()
	for _, a := range addrs {
		if _, err := l.Exec(ctx, lab.Client, "ip", "addr", "add", a+"/25", "dev", "eth0"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = l.Exec(context.Background(), lab.Client, "ip", "addr", "del", a+"/25", "dev", "eth0") })
	}
	accepted := listenHung(t, l.NS(lab.Client), addrs, 7947)
	kube := l.Client().CoreV1().Nodes()
	for i, a := range addrs {
		name := fmt.Sprintf("hung-%d", i+1)
		// Windows: the speaker DaemonSet makes no Pod for it, which
		// would wait unscheduled after the test (speakers still join
		// every Node's address)
		_, err := kube.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{corev1.LabelOSStable: "windows"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = kube.Delete(context.Background(), name, metav1.DeleteOptions{}) })
		// the node lifecycle controller taints the new Node meanwhile
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := kube.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: a}}
			_, err = kube.UpdateStatus(ctx, n, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return accepted
}

// listenHung listens on port of each address inside the network
// namespace ns, accepts every connection and never answers. The
// listeners and connections are closed when the test ends. It returns
// how many connections came from an address since a time.
func listenHung(t *testing.T, ns string, addrs []string, port int) func(from netip.Addr, since time.Time) int {
	t.Helper()
	f, err := os.Open(filepath.Join("/run/netns", ns))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type result struct {
		ls  []net.Listener
		err error
	}
	res := make(chan result)
	go func() {
		// Sockets are made in the namespace of the thread that makes
		// them. The thread goes back to its own namespace before it is
		// unlocked; if it cannot, it stays locked and ends with this
		// goroutine rather than serve others in ns.
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			res <- result{err: err}
			return
		}
		defer own.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			res <- result{err: fmt.Errorf("enter %s: %w", ns, err)}
			return
		}
		defer func() {
			if unix.Setns(int(own.Fd()), unix.CLONE_NEWNET) == nil {
				runtime.UnlockOSThread()
			}
		}()
		var r result
		for _, a := range addrs {
			ln, err := net.Listen("tcp", net.JoinHostPort(a, fmt.Sprint(port)))
			if err != nil {
				r.err = err
				break
			}
			r.ls = append(r.ls, ln)
		}
		res <- r
	}()
	r := <-res
	type conn struct {
		c    net.Conn
		from netip.Addr
		at   time.Time
	}
	var mu sync.Mutex
	var conns []conn
	t.Cleanup(func() {
		for _, ln := range r.ls {
			_ = ln.Close()
		}
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.c.Close()
		}
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	for _, ln := range r.ls {
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				from := netip.MustParseAddrPort(c.RemoteAddr().String()).Addr().Unmap()
				mu.Lock()
				conns = append(conns, conn{c: c, from: from, at: time.Now()})
				mu.Unlock()
			}
		}()
	}
	return func(from netip.Addr, since time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		var n int
		for _, c := range conns {
			if c.from == from && !c.at.Before(since) {
				n++
			}
		}
		return n
	}
}
