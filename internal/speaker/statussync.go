package speaker

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"

	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/bgp"
)

// statusReporter publishes this node's SpeakerStatus from its own
// queue, apart from the reconciles, so that a slow API server never
// delays announcing: a change asks for a write (changed), which is
// coalesced and rate-limited (statusPublisher).
type statusReporter struct {
	queue   workqueue.TypedRateLimitingInterface[string]
	pub     *statusPublisher
	nodes   corelisters.NodeLister             // the status's owner, this node
	content func() v1beta1.SpeakerStatusStatus // what this node announces now
}

func newStatusReporter(pub *statusPublisher, nodes corelisters.NodeLister, content func() v1beta1.SpeakerStatusStatus) *statusReporter {
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "speaker-status"})
	return &statusReporter{queue: q, pub: pub, nodes: nodes, content: content}
}

// publish writes this node's SpeakerStatus if what it announces changed;
// when the last write was less than the interval ago, it comes back once
// the interval has passed (the changes in between are coalesced into
// that one write). force writes at once (at shutdown).
func (r *statusReporter) publish(ctx context.Context, force bool) error {
	node, err := r.nodes.Get(r.pub.node)
	if err != nil {
		return fmt.Errorf("status: node %s (the SpeakerStatus's owner): %w", r.pub.node, err)
	}
	wait, err := r.pub.publish(ctx, r.content(), node.UID, force)
	if err != nil {
		return err
	}
	if wait > 0 {
		r.queue.AddAfter(statusKey, wait)
	}
	return nil
}

// changed asks for a status write (coalesced and rate-limited by
// publish; nothing is written when nothing changed).
func (r *statusReporter) changed() { r.queue.Add(statusKey) }

// watchOwn watches this node's SpeakerStatus alone (inf has a field
// selector on its name): deleted by someone, it is written again.
func (r *statusReporter) watchOwn(inf cache.SharedIndexInformer) error {
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(any) {
			r.pub.forget()
			r.changed()
		},
	})
	return err
}

// statusContent is what this node announces now.
func (s *Speaker) statusContent() v1beta1.SpeakerStatusStatus {
	s.mu.Lock()
	var l2 []l2Entry
	for _, ip := range slices.SortedFunc(maps.Keys(s.l2.owned), netip.Addr.Compare) {
		l2 = append(l2, l2Entry{IP: ip, Since: s.l2Since[ip]})
	}
	s.mu.Unlock()
	var routes []announce.Route
	if s.bgp != nil {
		routes = s.bgp.routes()
	}
	if s.opts.L2 != nil {
		for i := range l2 {
			l2[i].Interfaces = s.opts.L2.Interfaces(l2[i].IP)
		}
	}
	var sessions []bgp.SessionState
	if s.opts.BGP != nil {
		sessions = s.opts.BGP.Sessions()
	}
	return buildStatus(s.opts.PodName, l2, sessions, routes)
}

// noteL2Since records when this node started answering for each address
// it owns: claimed now, or owned without a time yet; an address it no
// longer owns is forgotten. ch names the addresses whose ownership may
// have changed besides claimed (all of them with ch.All; after a plan of
// some addresses, those it left): the others' times stay as they are. Call
// with s.mu held.
func (s *Speaker) noteL2Since(claimed []netip.Addr, ch announce.Changes) {
	now := s.opts.Now()
	for _, ip := range claimed {
		s.l2Since[ip] = now
	}
	if !ch.All {
		for _, ip := range ch.IPs {
			s.settleL2Since(ip, now)
		}
		return
	}
	for ip := range s.l2Since {
		s.settleL2Since(ip, now)
	}
	for ip := range s.l2.owned {
		s.settleL2Since(ip, now)
	}
}

// settleL2Since brings the time of one address in line with what this
// node owns.
func (s *Speaker) settleL2Since(ip netip.Addr, now time.Time) {
	_, owned := s.l2.owned[ip]
	_, known := s.l2Since[ip]
	switch {
	case !owned:
		delete(s.l2Since, ip)
	case !known:
		s.l2Since[ip] = now
	}
}
