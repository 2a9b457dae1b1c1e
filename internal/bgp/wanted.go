package bgp

import (
	"maps"
	"net/netip"
	"slices"
)

// wanted is the whole desired state as last given: the last Apply's
// Desired, with the paths ApplyPaths changed since. ApplyPaths applies it
// whole when it has nothing to build on.
type wanted struct {
	d Desired // Paths: those of Apply, less the prefixes in changed
	// changed are the paths of the prefixes ApplyPaths changed since
	// Apply, by prefix (as given when it is not valid).
	changed map[netip.Prefix][]Path
}

// wantedFrom records what Apply was given. It keeps d's slices, which
// the caller does not change afterwards (see Apply).
func wantedFrom(d Desired) wanted { return wanted{d: d} }

// change replaces the paths of the prefixes c changes (changed, from
// changedPrefixes).
func (w *wanted) change(c PathChange, changed []netip.Prefix) {
	if w.changed == nil {
		w.changed = map[netip.Prefix][]Path{}
	}
	for _, p := range changed {
		w.changed[p] = nil
	}
	for _, p := range c.Paths {
		k := pathKey(p.Prefix)
		w.changed[k] = append(w.changed[k], p)
	}
}

// desired is the whole desired state: Apply's paths of the prefixes
// ApplyPaths did not change, then the changed ones by prefix.
func (w *wanted) desired() Desired {
	d := w.d
	d.Paths = make([]Path, 0, len(w.d.Paths))
	for _, p := range w.d.Paths {
		if _, ok := w.changed[pathKey(p.Prefix)]; !ok {
			d.Paths = append(d.Paths, p)
		}
	}
	for _, p := range slices.SortedFunc(maps.Keys(w.changed), comparePrefix) {
		d.Paths = append(d.Paths, w.changed[p]...)
	}
	return d
}

// pathKey is the prefix a path is recorded under: its form in the RIB,
// or the prefix as given when it is not valid.
func pathKey(p netip.Prefix) netip.Prefix {
	if n, ok := normalPrefix(p); ok {
		return n
	}
	return p
}

// pathsOf are the desired paths of some prefixes (in RIB form).
func (w *wanted) pathsOf(prefixes []netip.Prefix) []Path {
	var out []Path
	for _, p := range prefixes {
		if paths, ok := w.changed[p]; ok {
			out = append(out, paths...)
			continue
		}
		for _, path := range w.d.Paths {
			if pathKey(path.Prefix) == p {
				out = append(out, path)
			}
		}
	}
	return out
}
