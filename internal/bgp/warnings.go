package bgp

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// maxListedPrefixes bounds how many prefixes one warning names.
const maxListedPrefixes = 3

// warnings collects per-session warnings, one line per kind of problem with
// the prefixes it concerns, so a thousand Services give one line, not a
// thousand.
type warnings struct {
	bySession map[string]map[string][]netip.Prefix
}

func newWarnings() *warnings {
	return &warnings{bySession: map[string]map[string][]netip.Prefix{}}
}

func (w *warnings) add(session, msg string, p netip.Prefix) {
	kinds := w.bySession[session]
	if kinds == nil {
		kinds = map[string][]netip.Prefix{}
		w.bySession[session] = kinds
	}
	if !slices.Contains(kinds[msg], p) {
		kinds[msg] = append(kinds[msg], p)
	}
}

// lines returns the sorted warnings of one session.
func (w *warnings) lines(session string) []string {
	kinds := w.bySession[session]
	var out []string
	for _, msg := range sortedKeys(kinds) {
		ps := slices.Clone(kinds[msg])
		slices.SortFunc(ps, comparePrefix)
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
