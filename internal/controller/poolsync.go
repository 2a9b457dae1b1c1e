package controller

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	heraldac "github.com/herald-lb/herald/api/generated/applyconfiguration/api/v1beta1"
	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/config"
)

// syncPool keeps a pool's finalizer, usage counts and conditions in step,
// and the record of the addresses held from it outside its ranges
// (status.addressesOutsideRanges), which the speakers and a restarted
// controller read to find those addresses' pool.
// Its status names as observed the generation the allocator's configuration
// was built from, which may be older than the pool in the cache: a client
// that waits for observedGeneration then knows its edit is in force. A pool
// the configuration has not seen yet waits for the rebuild, which enqueues
// every pool.
func (c *Controller) syncPool(ctx context.Context, name string) error {
	pool, err := c.listers.Pools.Get(name)
	if apierrors.IsNotFound(err) {
		c.metrics.forgetPool(name)
		return nil
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	usage := c.alloc.Usage(name)
	outside := ipStrings(c.alloc.OutsideRanges(name))
	holders := c.alloc.Holders(name)
	problems := config.ProblemsOf(c.problems, "IPAddressPool", name)
	gen, built := c.poolGens[name]
	rec := poolRecord(pool, c.poolInForce[name])
	c.mu.Unlock()
	if !built {
		return nil
	}
	c.metrics.setPool(name, usage)
	rv, err := c.syncFinalizer(ctx, pool, holders)
	if err != nil || rv == "" {
		return err
	}
	st := v1beta1.IPAddressPoolStatus{
		AssignedIPv4: sat(usage.IPv4.Assigned), AvailableIPv4: sat(usage.IPv4.Available),
		AssignedIPv6: sat(usage.IPv6.Assigned), AvailableIPv6: sat(usage.IPv6.Available),
		// the count is the list's length: readers take a count that
		// disagrees with the list for a status without the list
		OutsideRanges: int64(len(outside)), AddressesOutsideRanges: outside, ObservedGeneration: gen,
	}
	conds := poolConditions(problems, usage.OutsideRanges, pool.DeletionTimestamp != nil, holders)
	cur := pool.Status
	if cur.AssignedIPv4 == st.AssignedIPv4 && cur.AvailableIPv4 == st.AvailableIPv4 && cur.AssignedIPv6 == st.AssignedIPv6 &&
		cur.AvailableIPv6 == st.AvailableIPv6 && cur.OutsideRanges == st.OutsideRanges && cur.ObservedGeneration == st.ObservedGeneration &&
		slices.Equal(cur.AddressesOutsideRanges, st.AddressesOutsideRanges) &&
		sameConditions(cur.Conditions, conds, gen) && equality.Semantic.DeepEqual(cur.InForce, rec) {
		return nil
	}
	recAC, err := applyConfig[heraldac.IPAddressPoolInForceApplyConfiguration](rec)
	if err != nil {
		return err
	}
	ac := heraldac.IPAddressPool(name).WithResourceVersion(rv).WithStatus(heraldac.IPAddressPoolStatus().
		WithAssignedIPv4(st.AssignedIPv4).WithAvailableIPv4(st.AvailableIPv4).
		WithAssignedIPv6(st.AssignedIPv6).WithAvailableIPv6(st.AvailableIPv6).
		WithOutsideRanges(st.OutsideRanges).WithAddressesOutsideRanges(st.AddressesOutsideRanges...).
		WithObservedGeneration(st.ObservedGeneration).
		WithConditions(applyConditions(cur.Conditions, conds, gen, time.Now())...))
	ac.Status.InForce = recAC
	wctx, cancel, err := c.writeCtx(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	if _, err := c.herald.HeraldV1beta1().IPAddressPools().ApplyStatus(wctx, ac, c.applyOpts()); err != nil {
		return fmt.Errorf("pool %s status: %w", name, err)
	}
	return nil
}

// syncFinalizer holds every pool with herald.dev/pool-protection while it
// exists, and lets a deleted pool go once no Service holds its addresses.
// It returns the pool's resourceVersion after its write, if any.
func (c *Controller) syncFinalizer(ctx context.Context, pool *v1beta1.IPAddressPool, holders int) (string, error) {
	has := slices.Contains(pool.Finalizers, v1beta1.PoolProtectionFinalizer)
	deleting := pool.DeletionTimestamp != nil
	if (!deleting && !has) || (deleting && has && holders == 0) {
		wctx, cancel, err := c.writeCtx(ctx)
		if err != nil {
			return "", err
		}
		defer cancel()
		ctx = wctx
	}
	switch {
	case !deleting && !has:
		ac := heraldac.IPAddressPool(pool.Name).WithResourceVersion(pool.ResourceVersion).WithFinalizers(v1beta1.PoolProtectionFinalizer)
		got, err := c.herald.HeraldV1beta1().IPAddressPools().Apply(ctx, ac, c.applyOpts())
		if err != nil {
			return "", fmt.Errorf("pool %s finalizer: %w", pool.Name, err)
		}
		return got.ResourceVersion, nil
	case deleting && has && holders == 0:
		_, err := c.herald.HeraldV1beta1().IPAddressPools().Apply(ctx, heraldac.IPAddressPool(pool.Name).WithResourceVersion(pool.ResourceVersion), c.applyOpts())
		if err != nil && !c.poolGone(ctx, pool.Name) {
			return "", fmt.Errorf("pool %s finalizer removal: %w", pool.Name, err)
		}
		c.log.Info("pool released", "pool", pool.Name, "reason", "deleted and no Service holds its addresses")
		return "", nil // the pool is gone
	case deleting && has:
		c.rec.Eventf(pool, corev1.EventTypeNormal, "DeletionWaits", "%d Service(s) still hold addresses of this pool; it is deleted when the last one releases them", holders)
	}
	return pool.ResourceVersion, nil
}

// poolGone reports whether the API server has no pool name any more. A
// deleted pool whose finalizer another writer (or an earlier attempt whose
// answer was lost) removed is gone while the cache still shows it: an
// apply then asks to create it and is refused as invalid, which is no
// failure to retry.
func (c *Controller) poolGone(ctx context.Context, name string) bool {
	_, err := c.herald.HeraldV1beta1().IPAddressPools().Get(ctx, name, metav1.GetOptions{})
	return apierrors.IsNotFound(err)
}

// poolRecord returns the record in force to write in the pool's status:
// built, the one of the built version if that is the pool's current
// version (same UID and generation), else the record it has.
func poolRecord(pool *v1beta1.IPAddressPool, built *v1beta1.IPAddressPoolInForce) *v1beta1.IPAddressPoolInForce {
	if built != nil && built.UID == pool.UID && built.Generation == pool.Generation {
		return built
	}
	return pool.Status.InForce
}

func poolConditions(problems []config.Problem, outside uint64, deleting bool, holders int) []condition {
	ok, reason, msg := validCondition(problems)
	conflict := condition{Type: v1beta1.ConditionConflicting, Reason: "NoOverlap", Message: "no older pool overlaps this pool"}
	for _, p := range problems {
		if p.Reason == config.ReasonConflicting {
			conflict = condition{Type: v1beta1.ConditionConflicting, Status: true, Reason: "OverlapsOlderPool",
				Message: fmt.Sprintf("addresses overlap IPAddressPool %s, which is older; this pool is not used", p.ConflictsWith)}
		}
	}
	if ok && deleting {
		reason, msg = "Deleting", fmt.Sprintf("being deleted: hands out no new address; %d Service(s) still hold its addresses", holders)
	}
	out := condition{Type: v1beta1.ConditionAddressesOutsideRanges, Reason: "AllInside", Message: "every address held from this pool is inside its ranges"}
	if outside > 0 {
		out = condition{Type: v1beta1.ConditionAddressesOutsideRanges, Status: true, Reason: "OutsideRanges",
			Message: fmt.Sprintf("%d address(es) held by Services are outside the pool's current ranges; they stay with their Services", outside)}
	}
	return []condition{{Type: v1beta1.ConditionValid, Status: ok, Reason: reason, Message: msg}, conflict, out}
}

func sat(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}
