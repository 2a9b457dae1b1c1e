package bgp

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
)

// maxListedPrefixes bounds how many prefixes one warning names.
const maxListedPrefixes = 3

// warnings collects per-session warnings, one line per kind of problem with
// the prefixes it concerns, so a thousand Services give one line, not a
// thousand. The prefixes are sets: a path change adds and forgets the
// warnings of its prefixes alone.
type warnings struct {
	bySession map[string]map[string]map[netip.Prefix]struct{}
}

func newWarnings() *warnings {
	return &warnings{bySession: map[string]map[string]map[netip.Prefix]struct{}{}}
}

func (w *warnings) add(session, msg string, p netip.Prefix) {
	kinds := w.bySession[session]
	if kinds == nil {
		kinds = map[string]map[netip.Prefix]struct{}{}
		w.bySession[session] = kinds
	}
	if kinds[msg] == nil {
		kinds[msg] = map[netip.Prefix]struct{}{}
	}
	kinds[msg][p] = struct{}{}
}

// merge adds every warning of o.
func (w *warnings) merge(o *warnings) {
	for session, kinds := range o.bySession {
		for msg, ps := range kinds {
			for p := range ps {
				w.add(session, msg, p)
			}
		}
	}
}

// forget removes the warnings about these prefixes and reports whether
// there were any.
func (w *warnings) forget(prefixes []netip.Prefix) bool {
	changed := false
	for session, kinds := range w.bySession {
		for msg, ps := range kinds {
			for _, p := range prefixes {
				if _, ok := ps[p]; ok {
					delete(ps, p)
					changed = true
				}
			}
			if len(ps) == 0 {
				delete(kinds, msg)
			}
		}
		if len(kinds) == 0 {
			delete(w.bySession, session)
		}
	}
	return changed
}

func (w *warnings) empty() bool { return len(w.bySession) == 0 }

// lines returns the sorted warnings of one session.
func (w *warnings) lines(session string) []string {
	kinds := w.bySession[session]
	var out []string
	for _, msg := range sortedKeys(kinds) {
		ps := slices.SortedFunc(maps.Keys(kinds[msg]), comparePrefix)
		out = append(out, fmt.Sprintf("%s: %s", msg, listPrefixes(ps)))
	}
	return out
}

func listPrefixes(ps []netip.Prefix) string {
	n := min(len(ps), maxListedPrefixes)
	parts := make([]string, 0, n+1)
	for _, p := range ps[:n] {
		parts = append(parts, p.String())
	}
	if len(ps) > n {
		parts = append(parts, fmt.Sprintf("and %d more", len(ps)-n))
	}
	return strings.Join(parts, ", ")
}

func comparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}
