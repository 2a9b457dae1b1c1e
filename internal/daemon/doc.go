// Package daemon holds the process plumbing both binaries share: the slog
// logger from a level flag, the Prometheus registry and its HTTP endpoint,
// health endpoints, and a context that ends on SIGTERM or SIGINT. No
// business logic lives here.
package daemon
