package bgp

import "context"

// Change is one hand-over of the desired state: everything changed (All:
// Desired is the whole desired state), or only the paths of some
// prefixes (Paths, as the last Desired whose paths of those prefixes are
// replaced). "Everything changed" is one more change, so that a caller
// has one call whatever changed.
type Change struct {
	All     bool
	Desired Desired    // with All
	Paths   PathChange // without All
}

// ApplyChange applies c: Apply with the whole desired state, else
// ApplyPaths with the changed prefixes (which applies the whole state
// itself when it has nothing to build on).
func (s *Speaker) ApplyChange(ctx context.Context, c Change) error {
	if c.All {
		return s.Apply(ctx, c.Desired)
	}
	return s.ApplyPaths(ctx, c.Paths)
}
