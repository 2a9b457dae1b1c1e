package controller

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/cache"
)

// incompleteSet is the set of Services whose herald.dev/Announced
// condition says SharedLocalIncomplete, counted by the gauge
// herald_controller_shared_local_incomplete: a Service joins when a sync
// computes that reason and leaves when a sync computes another one, or
// when it is deleted or no longer Herald's.
type incompleteSet struct {
	mu    sync.Mutex
	keys  map[cache.ObjectName]bool
	gauge prometheus.Gauge
}

func newIncompleteSet(g prometheus.Gauge) *incompleteSet {
	return &incompleteSet{keys: map[cache.ObjectName]bool{}, gauge: g}
}

// note records whether the Service's condition now says
// SharedLocalIncomplete.
func (s *incompleteSet) note(key cache.ObjectName, incomplete bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if incomplete {
		s.keys[key] = true
	} else {
		delete(s.keys, key)
	}
	s.gauge.Set(float64(len(s.keys)))
}
