package controller

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-lb/herald/internal/allocator"
)

type metrics struct {
	addresses   *prometheus.GaugeVec
	inUse       *prometheus.GaugeVec
	allocations prometheus.Counter
	failures    *prometheus.CounterVec
	reconcile   prometheus.Histogram
	syncErrors  *prometheus.CounterVec
	// sharedLocalIncomplete counts the Services whose Announced condition
	// says SharedLocalIncomplete.
	sharedLocalIncomplete *incompleteSet
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		addresses: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "herald", Subsystem: "controller", Name: "pool_addresses",
			Help: "Addresses a pool holds (assigned plus available), per IP family; IPv6 saturates at 2^63-1."}, []string{"pool", "family"}),
		inUse: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "herald", Subsystem: "controller", Name: "pool_addresses_in_use",
			Help: "Addresses of a pool held by Services, per IP family."}, []string{"pool", "family"}),
		allocations: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "herald", Subsystem: "controller", Name: "allocations_total",
			Help: "Services given new addresses."}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "herald", Subsystem: "controller", Name: "allocation_failures_total",
			Help: "Service syncs whose request could not be met, by reason."}, []string{"reason"}),
		reconcile: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "herald", Subsystem: "controller", Name: "reconcile_duration_seconds",
			Help: "Time to sync one Service.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		syncErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "herald", Subsystem: "controller", Name: "sync_errors_total",
			Help: "Failed syncs of any queue (retried with backoff), by reason: Conflict, NotLeader, Gone, Allocation, Timeout or the API status reason."}, []string{"reason"}),
	}
	incomplete := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "herald", Subsystem: "controller", Name: "shared_local_incomplete",
		Help: "Services whose herald.dev/Announced condition says SharedLocalIncomplete: they share an address with other externalTrafficPolicy Local Services and no node has a ready local endpoint of every one."})
	m.sharedLocalIncomplete = newIncompleteSet(incomplete)
	for _, c := range []prometheus.Collector{m.addresses, m.inUse, m.allocations, m.failures, m.reconcile, m.syncErrors, incomplete} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) setPool(name string, u allocator.Usage) {
	m.addresses.WithLabelValues(name, "IPv4").Set(float64(u.IPv4.Assigned + u.IPv4.Available))
	m.addresses.WithLabelValues(name, "IPv6").Set(float64(sat(u.IPv6.Assigned) + sat(u.IPv6.Available)))
	m.inUse.WithLabelValues(name, "IPv4").Set(float64(u.IPv4.Assigned))
	m.inUse.WithLabelValues(name, "IPv6").Set(float64(u.IPv6.Assigned))
}

func (m *metrics) forgetPool(name string) {
	for _, f := range []string{"IPv4", "IPv6"} {
		m.addresses.DeleteLabelValues(name, f)
		m.inUse.DeleteLabelValues(name, f)
	}
}
