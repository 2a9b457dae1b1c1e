package k8s

import (
	"log/slog"

	"k8s.io/klog/v2"
)

// RouteKlog sends client-go's klog output (leader election, reflectors,
// event broadcaster) into log, so that a binary writes one JSON stream.
// klog's verbosity levels map to slog's debug level, its errors to error.
func RouteKlog(log *slog.Logger) {
	klog.SetSlogLogger(log.With("source", "client-go"))
}
