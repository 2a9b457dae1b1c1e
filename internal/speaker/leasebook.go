package speaker

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/k8s"
	"github.com/herald-lb/herald/internal/k8s/lean"
)

// leaseBook reads the liveness Leases of the nodes it is asked about (the
// ones the member list cannot vouch for), not of every node: a watch of
// every Lease by every speaker would cost each speaker one event per
// renewal of every other (at 1,000 nodes and 5 s, 200 events a second
// each). It reads them once when first asked and then every renewal
// interval while they are still wanted; a node whose Lease it has not read
// yet is not alive. A Get per wanted node, or one List when many are
// wanted (a node cut off from every other member).
//
// It also tells whether a node's speaker renewed its Lease since the book
// began reading it (renewed): a change of the Lease seen here, so no clock
// of another node is compared with this one's.
type leaseBook struct {
	leases lean.LeaseClient
	now    func() time.Time
	// onChange is called when a wanted node's freshness, or whether it
	// renewed, changed.
	onChange func()

	mu     sync.Mutex
	wanted map[string]bool
	read   map[string]*coordinationv1.Lease
	fresh  map[string]bool
	// first is the renew time of a node's Lease at the first read since it
	// is wanted ("" when it had none): a later read showing another means
	// its speaker renewed it since.
	first map[string]string
	poke  chan struct{}
}

// listAbove is the number of wanted Leases above which one List replaces
// the Gets.
const listAbove = 8

func newLeaseBook(leases lean.LeaseClient, now func() time.Time, onChange func()) *leaseBook {
	return &leaseBook{leases: leases, now: now, onChange: onChange,
		wanted: map[string]bool{}, read: map[string]*coordinationv1.Lease{}, fresh: map[string]bool{},
		first: map[string]string{}, poke: make(chan struct{}, 1)}
}

// alive says whether node's Lease was fresh when last read and still is.
func (b *leaseBook) alive(node string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return k8s.LeaseFresh(b.read[node], b.now())
}

// peerKeys returns, for each node whose Lease was fresh when last read
// and announces key fingerprints, those fingerprints (sending key first).
func (b *leaseBook) peerKeys() map[string][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string][]string{}
	now := b.now()
	for n, l := range b.read {
		if l == nil || !k8s.LeaseFresh(l, now) {
			continue
		}
		if keys := v1beta1.ParseMemberlistKeys(l.Annotations[v1beta1.AnnotationMemberlistKeys]); len(keys) > 0 {
			out[n] = keys
		}
	}
	return out
}

// renewed says whether node's Lease was renewed since the book began
// reading it (its first read while wanted), and is fresh.
func (b *leaseBook) renewed(node string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.renewedLocked(node) && k8s.LeaseFresh(b.read[node], b.now())
}

// renewedLocked: the Lease last read shows another renew time than the
// first read.
func (b *leaseBook) renewedLocked(node string) bool {
	first, ok := b.first[node]
	return ok && renewTime(b.read[node]) != first
}

// renewTime is a Lease's renew time as the book compares it ("" for none).
func renewTime(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.RenewTime == nil {
		return ""
	}
	return l.Spec.RenewTime.UTC().Format(time.RFC3339Nano)
}

// unread says whether node is wanted and its Lease has not been read
// since (a read that failed counts as not read).
func (b *leaseBook) unread(node string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, read := b.fresh[node]
	return b.wanted[node] && !read
}

// want sets the nodes whose Leases matter; a node newly wanted is read at
// once.
func (b *leaseBook) want(nodes []string) {
	b.mu.Lock()
	next := map[string]bool{}
	added := false
	for _, n := range nodes {
		next[n] = true
		added = added || !b.wanted[n]
	}
	b.wanted = next
	maps.DeleteFunc(b.read, func(n string, _ *coordinationv1.Lease) bool { return !next[n] })
	maps.DeleteFunc(b.fresh, func(n string, _ bool) bool { return !next[n] })
	maps.DeleteFunc(b.first, func(n string, _ string) bool { return !next[n] })
	b.mu.Unlock()
	if added {
		select {
		case b.poke <- struct{}{}:
		default:
		}
	}
}

// poll reads the wanted Leases and reports whether a node's freshness
// changed.
func (b *leaseBook) poll(ctx context.Context) bool {
	b.mu.Lock()
	nodes := slices.Sorted(maps.Keys(b.wanted))
	b.mu.Unlock()
	if len(nodes) == 0 {
		return false
	}
	got := map[string]*coordinationv1.Lease{}
	failed := map[string]bool{} // not read: no Lease known, and the Get failed
	if len(nodes) > listAbove {
		list, err := b.leases.List(ctx, metav1.ListOptions{LabelSelector: leaseLabel + "=true", ResourceVersion: "0"})
		if err != nil {
			return false
		}
		for i := range list.Items {
			// By name, never by holderIdentity: a node writes only its
			// own Lease, so its name says whose it is; the identity it
			// holds is whatever that node wrote (see leaseOwner).
			if n, ok := leaseOwner(list.Items[i].Name); ok {
				got[n] = &list.Items[i]
			}
		}
	} else {
		for _, n := range nodes {
			l, err := b.leases.Get(ctx, LeaseName(n), metav1.GetOptions{ResourceVersion: "0"})
			switch {
			case err == nil:
				got[n] = l
			case apierrors.IsNotFound(err):
			default:
				l, ok := b.lastRead(n) // keep what we knew
				got[n], failed[n] = l, !ok
			}
		}
	}
	return b.store(nodes, got, failed)
}

// leaseOwner is the node whose liveness Lease is named name.
func leaseOwner(name string) (string, bool) {
	n, ok := strings.CutPrefix(name, LeasePrefix)
	return n, ok && n != ""
}

// lastRead is the Lease last read for n, and whether one was read.
func (b *leaseBook) lastRead(n string) (*coordinationv1.Lease, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, ok := b.read[n]
	return l, ok
}

func (b *leaseBook) store(nodes []string, got map[string]*coordinationv1.Lease, failed map[string]bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now, changed := b.now(), false
	for _, n := range nodes {
		if !b.wanted[n] || failed[n] {
			continue
		}
		wasRenewed := b.renewedLocked(n)
		b.read[n] = got[n]
		f := k8s.LeaseFresh(got[n], now)
		// A first read always counts as a change: before it a node was
		// unread, which keeps an isolated node's dead members up (live),
		// and a stale first Lease turns them down as a fresh one does.
		if was, ok := b.fresh[n]; !ok || was != f {
			changed = true
			b.fresh[n] = f
		}
		if _, ok := b.first[n]; !ok {
			b.first[n] = renewTime(got[n])
		}
		changed = changed || b.renewedLocked(n) != wasRenewed
	}
	return changed
}

// run polls every interval, and at once when a node is newly wanted,
// until ctx ends.
func (b *leaseBook) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-b.poke:
		}
		if b.poll(ctx) && b.onChange != nil {
			b.onChange()
		}
	}
}
