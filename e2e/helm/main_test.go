// Package helm holds the end-to-end test of the Helm chart in the lab's
// real cluster: `helm install` of charts/herald with the images built
// from this checkout, on a cluster already holding the configuration and
// a Service, brings Herald up while the client probes the Service's
// requested addresses (from the first answer on: no gap, never two nodes
// beyond a hand-over's overlap, as the speakers join one by one), and
// the Service's addresses answer and serve HTTP; `helm upgrade` with a
// changed value rolls the speakers while the client probes the
// addresses; the chart's ServiceMonitors, PodMonitors and PrometheusRule
// apply server-side against the Prometheus Operator's CRDs, and a real
// Prometheus scrapes every speaker and controller and evaluates the
// chart's alerts (monitoring_test.go); `helm uninstall` leaves the CRDs
// and only what docs/operations.md says; then a release with a custom
// lbClass serves the Services of that class and leaves every other
// Service alone; two releases side by side (the default installation and
// a second one with its own installation name, class, pools and ports)
// each serve their own Services and never write the other's, and either
// keeps serving when the other is uninstalled (installations_test.go).
// Its lab runs kube-proxy in iptables
// mode: every other package runs nftables, so the VIP data path (HTTP
// through an address Herald announces) is proven in both.
package helm

import (
	"testing"

	"github.com/herald-lb/herald/e2e/lab"
)

func TestMain(m *testing.M) { lab.Main(m, lab.Options{Nodes: 3, ProxyMode: lab.IPTables}) }
