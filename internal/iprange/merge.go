package iprange

import "slices"

// Merge returns the ranges of rs sorted, with overlapping and adjacent
// ranges of one family joined: the same addresses, each once. rs is not
// modified.
func Merge(rs []Range) []Range {
	sorted := slices.Clone(rs)
	slices.SortFunc(sorted, Range.Compare)
	out := make([]Range, 0, len(sorted))
	for _, r := range sorted {
		if n := len(out); n > 0 && joins(out[n-1], r) {
			if r.Last.Compare(out[n-1].Last) > 0 {
				out[n-1].Last = r.Last
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// joins reports whether b (sorted after a) overlaps a or starts right after
// it.
func joins(a, b Range) bool {
	if a.First.BitLen() != b.First.BitLen() {
		return false
	}
	if a.Overlaps(b) {
		return true
	}
	next := a.Last.Next()
	return next.IsValid() && next == b.First
}
