package k8s

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// NewRecorder starts an event broadcaster writing core/v1 events to sink
// and returns a recorder for component, plus a function that flushes and
// stops it. The scheme must know the kinds events are recorded on.
func NewRecorder(ctx context.Context, sink record.EventSink, scheme *runtime.Scheme, component string) (record.EventRecorder, func()) {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(sink)
	rec := b.NewRecorder(scheme, corev1.EventSource{Component: component})
	return rec, b.Shutdown
}
