package speaker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/herald-lb/herald/internal/announce"
)

// reconcile computes what this node announces and applies the difference
// to both backends.
func (s *Speaker) reconcile(ctx context.Context) error {
	// One at a time (the worker's, Shutdown's): the Service cache hands
	// out its own slice and the changes since the last reconcile.
	s.reconcileMu.Lock()
	defer s.reconcileMu.Unlock()
	start := time.Now()
	defer func() { s.metrics.reconcile.Observe(time.Since(start).Seconds()) }()
	welcomes, _ := s.liveness.memberList().(Welcomes)
	var gen uint64
	if welcomes != nil {
		gen = welcomes.Generation() // before any member state is read
	}
	st, _, err := s.state()
	if err != nil {
		return fmt.Errorf("reading state: %w", err)
	}
	changes := s.cluster.svcCache.takeChanges()
	s.liveness.join(st.Nodes)
	isolated := s.liveness.observe(st.Nodes)
	held := s.currentHold()
	s.noteFallbacks(st)
	s.l2.reconcile(st, changes, start, isolated, held)
	if welcomes != nil {
		welcomes.Applied(gen) // the members that started are handed their addresses
	}
	if s.bgp != nil {
		if err := s.bgp.reconcile(ctx, st, changes.asChanges(), held, s.leaving.Load()); err != nil {
			return err
		}
	}
	if s.liveness.settled() {
		s.ready.reconciled.Store(true)
	}
	s.status.changed()
	return nil
}

// planKind is the l2_plans_total kind of a plan given ch.
func planKind(ch announce.Changes) string { return applyKind(!ch.All) }

func joinNames(names []string) string { return strings.Join(names, ", ") }

// noteFallbacks logs, when the list changes, the addresses announced for
// the pool their Service's annotation names because that pool's status
// has no record of its outside addresses yet (announce.AnnotationFallbacks).
func (s *Speaker) noteFallbacks(st announce.State) {
	fb := announce.AnnotationFallbacks(st)
	key := strings.Join(fb, ",")
	if key == s.fallbacks {
		return
	}
	s.fallbacks = key
	if len(fb) == 0 {
		s.log.Info("every address outside its pool's ranges is found in a pool's record")
		return
	}
	s.log.Warn("addresses outside every pool's ranges follow their Service's pool annotation until the pool's status records them (no record yet: upgrade or a pool edit not yet described by the controller)",
		"addresses", fb)
}
