package allocator

import (
	"cmp"
	"fmt"
	"slices"
)

// poolSet is the configured pools, by name and in the order Services try
// them.
type poolSet struct {
	byName  map[string]*poolState
	ordered []*poolState
}

func newPoolSet(pools []Pool) (*poolSet, error) {
	s := &poolSet{byName: make(map[string]*poolState, len(pools))}
	for _, p := range pools {
		ps, err := newPoolState(p)
		if err != nil {
			return nil, err
		}
		if _, dup := s.byName[p.Name]; dup {
			return nil, fmt.Errorf("pool %s is configured twice", p.Name)
		}
		s.byName[p.Name] = ps
		s.ordered = append(s.ordered, ps)
	}
	slices.SortFunc(s.ordered, comparePools)
	for i, p := range s.ordered {
		p.rank = i
	}
	return s, nil
}

// comparePools orders by priority (lower first, none last), then name.
func comparePools(a, b *poolState) int {
	switch {
	case a.Priority != nil && b.Priority != nil:
		if c := cmp.Compare(*a.Priority, *b.Priority); c != 0 {
			return c
		}
	case a.Priority != nil:
		return -1
	case b.Priority != nil:
		return 1
	}
	return cmp.Compare(a.Name, b.Name)
}
