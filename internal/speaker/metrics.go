package speaker

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	announced *prometheus.GaugeVec
	releasing prometheus.Gauge
	reconcile prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		announced: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "herald", Subsystem: "speaker", Name: "announced",
			Help: "Addresses this node answers for in L2 mode (protocol=l2), and routes it advertises (protocol=bgp)."}, []string{"protocol"}),
		releasing: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "herald", Subsystem: "speaker", Name: "l2_releasing",
			Help: "Addresses this node is handing over to another node (it answers until the new owner announces itself)."}),
		reconcile: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "herald", Subsystem: "speaker", Name: "reconcile_duration_seconds",
			Help: "Time to compute and apply what this node announces.", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}),
	}
	for _, c := range []prometheus.Collector{m.announced, m.releasing, m.reconcile} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
