// Package k8s holds the Kubernetes plumbing both binaries share and that
// needs no generated clientset: REST configuration from flags, the event
// recorder over any sink, klog routed into slog, list-then-watch informers,
// Lease freshness, and the informer plumbing (the listers config.Build
// reads, EndpointSlices indexed by Service). It holds no business logic.
// It must not import client-go's clientset or informers (the speaker
// imports it; see internal/k8s/lean): internal/k8s/clientset holds what
// does.
package k8s
