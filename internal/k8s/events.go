package k8s

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// NewRecorder starts an event broadcaster writing core/v1 events to sink
// and returns a recorder for component, plus a function that flushes and
// stops it. The scheme must know the kinds events are recorded on.
//
// client-go's spam filter gives every (source, object, event type) a
// budget of 25 events, then one per 5 minutes, and drops the rest
// silently. Keyed so, a burst of one Warning (a BGP session's connect
// errors while its router restarts) silenced another (that session going
// down) on the same BGPPeer. Here the reason is part of the key: each kind
// of event on an object has its own budget.
func NewRecorder(ctx context.Context, sink record.EventSink, scheme *runtime.Scheme, component string) (record.EventRecorder, func()) {
	b := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{SpamKeyFunc: spamKey}))
	b.StartRecordingToSink(sink)
	rec := b.NewRecorder(scheme, corev1.EventSource{Component: component})
	return rec, b.Shutdown
}

// spamKey is client-go's spam key (record.getSpamKey) with the reason.
func spamKey(e *corev1.Event) string {
	return strings.Join([]string{
		e.Source.Component, e.Source.Host,
		e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name,
		string(e.InvolvedObject.UID), e.InvolvedObject.APIVersion,
		e.Type, e.Reason,
	}, "\x00")
}
