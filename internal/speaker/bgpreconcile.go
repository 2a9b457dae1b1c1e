package speaker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/vrf"
)

// bgpReconciler hands this node's BGP sessions and routes to the BGP
// backend, one change set per reconcile, and records an event for each
// Service whose advertised routes changed. It owns the memo of the last
// decision and what the backend was last given.
type bgpReconciler struct {
	backend BGP
	node    string
	nodes   corelisters.NodeLister // this node's addresses
	events  serviceEvents
	log     *slog.Logger
	metrics *metrics
	now     func() time.Time
	// vrfs is the node's VRFs as last read, with a key that changes with
	// them (Speaker.vrfTable).
	vrfs  func() (vrf.Table, string, error)
	first atomic.Int64 // unix ns of the first hand-over (readiness); 0: none yet

	mu          sync.Mutex          // guards the state below
	memo        announce.BGPMemo    // the BGP decision of the last reconcile
	pending     announce.Changes    // Service changes that have not reached the memo
	advert      map[string][]string // Service -> routes it is advertised with, for events
	advertising bool                // the memo's routes are advertised (not held, not leaving)
	ownNodeGone bool                // this node's Node object was not found at the last reconcile
	// applied is what the last hand-over was given besides the memo's
	// result, when it succeeded outside a hold (ok): a reconcile that
	// would give it the same skips it.
	applied bgpApplied
	lastErr error
	// drain is this node's drain label as the last reconcile saw it;
	// drainWait the graceful-shutdown wait (drainStep), after which
	// reconcileAfter brings the withdrawal.
	drain          bgpDrain
	drainWait      time.Duration
	reconcileAfter func(time.Duration)
}

// bgpApplied is what a successful BGP hand-over outside a hold was given
// besides the memo's result: the node's addresses and VRFs.
type bgpApplied struct {
	ok     bool
	v4, v6 netip.Addr
	vrfs   string // vrf.Table.Key of the node's VRFs
	gshut  bool   // the paths went out with GRACEFUL_SHUTDOWN (a drain's wait)
}

// reconcile decides this node's BGP sessions and routes and hands them
// to the backend as one change set: when only some Services changed
// since the last reconcile (changes) and nothing else did, only their
// prefixes (BGPMemo.Update with their keys): the work is proportional to
// the change. Otherwise everything. held (or leaving): no session, no
// route.
func (b *bgpReconciler) reconcile(ctx context.Context, st announce.State, changes announce.Changes, held, leaving bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	// The memo learns of changed Services from change sets alone: those
	// of a reconcile that does not update it wait for the next one.
	b.pending = b.pending.Merge(changes)
	if leaving {
		b.advertising, b.applied = false, bgpApplied{}
		return nil
	}
	v4, v6, gone, err := b.ownAddresses()
	if err != nil {
		return err
	}
	held = held || gone
	gshut := !held && b.drainGracefully()
	if gshut {
		st.Eligibility.IgnoreDrain = true // announce as before, marked
	}
	if !held {
		b.memo.Update(st, b.node, b.pending) // nothing to do when nothing it depends on changed
		b.pending = announce.Changes{}
	}
	vrfs, vrfKey, vrfErr := b.vrfs()
	applied := bgpApplied{ok: true, v4: v4, v6: v6, vrfs: vrfKey, gshut: gshut}
	if !held && b.memo.Same() && b.applied == applied {
		// Nothing the sessions and routes depend on changed (member-list
		// and Lease changes are not among it) and the last hand-over
		// took: no O(routes) work, no events to compare.
		return nil
	}
	// Only the Services whose routes may have changed are compared for
	// events, unless everything changed.
	all := bgpWhole(held, b.memo.Changes().All, b.applied, applied)
	var res announce.BGPResult // held: no session, no route
	if all && !held {
		res = b.memo.Result()
	}
	c := bgpChange(&b.memo, all, res, st.Config, v4, v6)
	if c.All {
		placeVRFs(c.Desired.Sessions, vrfs, vrfErr, b.node)
		c.Desired.GracefulShutdown = gshut
	}
	err = b.backend.ApplyChange(ctx, c)
	b.applied = bgpApplied{ok: err == nil && !held, v4: v4, v6: v6, vrfs: vrfKey, gshut: gshut}
	b.noteApplied(err, all, held)
	if all {
		b.noteEvents(advertisedRoutes(res), true)
	} else {
		b.noteEvents(changedAdvertisements(&b.memo), false)
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return nil // refused sessions are reported, not retried in a loop
}

// bgpWhole says whether everything changed for the backend: held (no
// session, no route), the memo changed everything (the configuration,
// this node), or the last hand-over did not take with these node
// addresses and VRFs (last, from the previous reconcile; now, this
// one's). Else
// only some Services changed, and the backend gets their prefixes alone.
func bgpWhole(held, memoAll bool, last, now bgpApplied) bool {
	return held || memoAll || last != now
}

// ownAddresses are this node's addresses; gone: its Node object is not
// found. The cluster removed this node while its speaker runs (its
// kubelet stopped, then its Node deleted): it is no load-balancer node
// any more, as the other speakers see it. Like a held speaker it closes
// its sessions and withdraws its routes, until the kubelet registers the
// node anew. Call with b.mu held.
func (b *bgpReconciler) ownAddresses() (v4, v6 netip.Addr, gone bool, err error) {
	switch me, err := b.nodes.Get(b.node); {
	case apierrors.IsNotFound(err):
		if !b.ownNodeGone {
			b.log.Warn("this node's Node object is gone: no BGP session and no route until it is registered again")
		}
		b.ownNodeGone = true
		return v4, v6, true, nil
	case err != nil:
		return v4, v6, false, fmt.Errorf("node %s: %w", b.node, err)
	default:
		if b.ownNodeGone {
			b.log.Info("this node's Node object is back")
		}
		b.ownNodeGone = false
		v4, v6 = nodeAddresses(me)
		return v4, v6, false, nil
	}
}

// noteApplied records a hand-over's outcome: its kind and the routes
// announced (metrics), the first hand-over (readiness), and a refusal
// when it differs from the last one (logged once). Call with b.mu held.
func (b *bgpReconciler) noteApplied(err error, all, held bool) {
	b.metrics.bgpApplies.WithLabelValues(applyKind(!all)).Inc()
	b.first.CompareAndSwap(0, b.now().UnixNano())
	if err != nil && (b.lastErr == nil || b.lastErr.Error() != err.Error()) {
		b.log.Warn("BGP configuration partly refused", "error", err)
	}
	b.lastErr = err
	b.advertising = !held
	b.metrics.announced.WithLabelValues("bgp").Set(float64(b.routeCount()))
}

func applyKind(incremental bool) string {
	if incremental {
		return "changed"
	}
	return "full"
}

// noteEvents records an event for each Service whose advertised routes
// changed and logs those withdrawn. routes holds every Service's routes
// when all, else only those that may have changed (nil: none left).
// Call with b.mu held.
func (b *bgpReconciler) noteEvents(routes map[string][]string, all bool) {
	if b.advert == nil {
		b.advert = map[string][]string{}
	}
	for key, desc := range routes {
		if len(desc) == 0 || slices.Equal(b.advert[key], desc) {
			continue
		}
		b.events.eventf(key, corev1.EventTypeNormal, "BGPAdvertised", "node %s advertises %s", b.node, strings.Join(desc, "; "))
		b.log.Info("advertising", "service", key, "routes", desc)
	}
	for key := range b.advert {
		if desc, ok := routes[key]; (all && !ok) || (ok && len(desc) == 0) {
			b.log.Info("withdrawn", "service", key, "protocol", "bgp")
			delete(b.advert, key)
		}
	}
	for key, desc := range routes {
		if len(desc) > 0 {
			b.advert[key] = desc
		}
	}
}

// routeCount is the number of routes this node advertises. Call with
// b.mu held.
func (b *bgpReconciler) routeCount() int {
	if !b.advertising {
		return 0
	}
	return b.memo.RouteCount()
}

// routes are the routes this node advertises (for its status), laid out
// (O(routes)) when they changed since the last call.
func (b *bgpReconciler) routes() []announce.Route {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.advertising {
		return nil
	}
	return b.memo.Result().Routes
}

// firstApply is when the backend was first handed a configuration; zero
// before.
func (b *bgpReconciler) firstApply() time.Time {
	if ns := b.first.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}
