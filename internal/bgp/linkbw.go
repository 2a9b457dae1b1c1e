package bgp

import (
	"context"
	"errors"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"time"
)

// The link-bandwidth extended community (draft-ietf-idr-link-bandwidth):
// non-transitive, type 0x40, sub-type 0x04, a 2-octet AS and the
// bandwidth as an IEEE float in bytes per second. A router doing weighted
// ECMP (FRR: bgp bestpath bandwidth) splits flows over the paths of a
// prefix in proportion to their bandwidths; only the ratios count.
const (
	// bytesPerEndpoint is what one ready local endpoint stands for:
	// 1 Mbit/s, so that a router shows N endpoints as N Mbit/s (FRR:
	// "LB:64512:125000 (1.000 Mbps)").
	bytesPerEndpoint = 125_000
	// maxWeight caps the endpoints a path stands for: FRR reads the
	// bandwidth into a 32-bit count of bytes per second.
	maxWeight = math.MaxUint32 / bytesPerEndpoint
	// asTrans stands in for a 4-octet AS in the community's 2-octet field
	// (RFC 6793); routers do not weigh by it.
	asTrans = 23456
	// weightHold is how long a changed weight waits before it is sent:
	// a rollout changes a node's ready endpoints one pod at a time over
	// seconds, and each change would be an UPDATE and a FIB change on
	// the router. Held for 2 s from the first change, the router gets at
	// most one weight change per prefix and session every 2 s, the
	// latest. A new path and a withdrawn one (no endpoint left) are not
	// held.
	weightHold = 2 * time.Second
)

// linkBandwidth is the bandwidth, in bytes per second, that a path
// standing for weight ready local endpoints carries: weight Mbit/s,
// capped at maxWeight endpoints. 0 (no endpoint) sends no community.
func linkBandwidth(weight uint32) uint32 {
	return min(weight, maxWeight) * bytesPerEndpoint
}

// linkBandwidthCommunity is the community in the text form of GoBGP's
// policy actions ("lb:AS:bytes-per-second"), for a session whose local AS
// is asn.
func linkBandwidthCommunity(asn uint32, bytesPerSecond uint32) string {
	if asn > math.MaxUint16 {
		asn = asTrans
	}
	return "lb:" + strconv.FormatUint(uint64(asn), 10) + ":" + strconv.FormatUint(uint64(bytesPerSecond), 10)
}

// dampWeights returns the delivery to send for one prefix, the weights of
// desired held back to those applied while a change is younger than
// weightHold, and when the change the prefix is held for began (zero:
// nothing held). since is what the last call returned for the prefix. Only
// a change between two weights is held: a session that gains or loses the
// community, or the prefix, gets the change at once.
func dampWeights(applied, desired delivery, since, now time.Time) (delivery, time.Time) {
	var changed []netip.Addr
	for a, want := range desired {
		have, ok := applied[a]
		if ok && have.linkBW > 0 && want.linkBW > 0 && have.linkBW != want.linkBW {
			changed = append(changed, a)
		}
	}
	if len(changed) == 0 {
		return desired, time.Time{}
	}
	if since.IsZero() {
		since = now
	}
	if now.Sub(since) >= weightHold {
		return desired, time.Time{}
	}
	out := make(delivery, len(desired))
	for a, want := range desired {
		out[a] = want
	}
	for _, a := range changed {
		want := out[a]
		want.linkBW = applied[a].linkBW
		out[a] = want
	}
	return out, since
}

// holdWeights applies dampWeights to the prefixes of plan a change
// names, records what is held, and arms the timer that sends it.
func (s *Speaker) holdWeights(plan pathPlan, prefixes []netip.Prefix) {
	now := s.clock()
	for _, p := range prefixes {
		d, ok := plan.deliveries[p]
		if !ok {
			delete(s.weightsHeld, p)
			continue
		}
		damped, since := dampWeights(s.deliveries[p], d, s.weightsHeld[p], now)
		plan.deliveries[p] = damped
		if since.IsZero() {
			delete(s.weightsHeld, p)
		} else {
			s.weightsHeld[p] = since
		}
	}
	s.armWeightTimer(now)
}

// armWeightTimer schedules releaseWeights for the first held change.
func (s *Speaker) armWeightTimer(now time.Time) {
	if len(s.weightsHeld) == 0 {
		return
	}
	first := time.Time{}
	for _, since := range s.weightsHeld {
		if first.IsZero() || since.Before(first) {
			first = since
		}
	}
	wait := first.Add(weightHold).Sub(now) + 5*time.Millisecond
	if s.weightTimer == nil {
		s.weightTimer = time.AfterFunc(wait, s.releaseWeights)
		return
	}
	s.weightTimer.Reset(wait)
}

// releaseWeights sends the held weights whose hold is over: the desired
// paths of those prefixes, applied again as ApplyPaths would.
func (s *Speaker) releaseWeights() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.weightsHeld) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := s.clock()
	var due []netip.Prefix
	for p, since := range s.weightsHeld {
		if now.Sub(since) >= weightHold {
			due = append(due, p)
		}
	}
	slices.SortFunc(due, comparePrefix)
	if len(due) == 0 {
		s.armWeightTimer(now)
		return
	}
	var err error
	if !s.pathsOnly {
		err = s.apply(ctx, s.want.desired())
	} else {
		s.pathsOnly = false
		plan := planPaths(s.want.pathsOf(due), s.last.sessions, s.last.nodeV4, s.last.nodeV6)
		var errs []error
		if s.srv != nil {
			errs = s.changePaths(ctx, due, plan, false)
		}
		s.pathsOnly = len(errs) == 0
		err = errors.Join(errs...)
	}
	if err != nil {
		s.log.Warn("sending held link-bandwidth weights", "error", err)
	}
}
