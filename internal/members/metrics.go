package members

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	members  *prometheus.GaugeVec
	failures prometheus.Counter
}

// newMetrics creates the collectors and registers them on reg (nil: not
// registered). A collector already registered by an earlier Members on the
// same registry (a restart inside one process) is reused.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		members: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "herald", Subsystem: "speaker", Name: "members",
			Help: "Nodes this speaker remembers, by member state (alive, suspect, dead, left); includes itself.",
		}, []string{"state"}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "herald", Subsystem: "speaker", Name: "member_failures_total",
			Help: "Nodes declared dead (stopped answering without leaving) as seen by this speaker.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.members, err = register(reg, m.members); err != nil {
		return nil, err
	}
	if m.failures, err = register(reg, m.failures); err != nil {
		return nil, err
	}
	return m, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("register member metrics: %w", err)
}

// setCounts publishes the number of nodes per state, zeros included, so a
// state that empties drops to 0 instead of keeping its last value.
func (m *metrics) setCounts(counts map[State]int) {
	for _, s := range knownStates() {
		m.members.WithLabelValues(s.String()).Set(float64(counts[s]))
	}
}
