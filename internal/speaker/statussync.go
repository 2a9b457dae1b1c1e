package speaker

import (
	"context"
	"fmt"
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
	want := r.content()
	want.Draining = announce.Draining(node.Labels)
	wait, err := r.pub.publish(ctx, want, node.UID, force)
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
	var routes []announce.Route
	var sessions []bgp.SessionState
	if s.bgp != nil {
		routes, sessions = s.bgp.routes(), s.bgp.backend.Sessions()
	}
	return buildStatus(s.opts.PodName, s.l2.entries(), sessions, routes)
}
