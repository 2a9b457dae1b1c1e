// Package k8s holds the Kubernetes plumbing both binaries share: REST
// configuration from flags (with QPS high enough for thousands of
// Services), a scheme that knows Herald's kinds, the event recorder,
// Lease leader election, and the informer plumbing both binaries use (the
// listers config.Build reads, EndpointSlices indexed by Service). It holds no business logic.
package k8s
