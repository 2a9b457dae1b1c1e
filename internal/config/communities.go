package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/herald-lb/herald/api/v1beta1"
)

const kindCommunity = "Community"

// buildAliases collects Community aliases; when two objects define one
// name, the older object wins and the newer is reported.
func buildAliases(in []*v1beta1.Community, ps *problems) map[string]string {
	sorted := append([]*v1beta1.Community(nil), in...)
	sort.SliceStable(sorted, func(i, j int) bool {
		ti, tj := sorted[i].CreationTimestamp.Time, sorted[j].CreationTimestamp.Time
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return sorted[i].Name < sorted[j].Name
	})
	aliases := map[string]string{}
	owner := map[string]string{}
	for _, obj := range sorted {
		for i, a := range obj.Spec.Communities {
			field := fmt.Sprintf("spec.communities[%d]", i)
			if _, _, err := parseCommunity(a.Value); err != nil {
				ps.add(Problem{Kind: kindCommunity, Name: obj.Name, Field: field + ".value", Reason: ReasonInvalidField, Message: err.Error()})
				continue
			}
			if prev, dup := owner[a.Name]; dup {
				ps.add(Problem{Kind: kindCommunity, Name: obj.Name, Field: field + ".name", Reason: ReasonDuplicateAlias,
					Message: fmt.Sprintf("alias %s is already defined by Community %s, which is older; this definition is ignored", a.Name, prev)})
				continue
			}
			aliases[a.Name], owner[a.Name] = a.Value, obj.Name
		}
	}
	return aliases
}

// resolveCommunities fills the advertisement's standard and large
// communities, resolving aliases; an unknown alias is reported and dropped.
func resolveCommunities(adv *BGPAdvertisement, in []string, aliases map[string]string, ps *problems) {
	std := map[uint32]bool{}
	large := map[[3]uint32]bool{}
	for i, c := range in {
		field := fmt.Sprintf("spec.communities[%d]", i)
		value := c
		if isAliasName(c) {
			v, ok := aliases[c]
			if !ok {
				ps.add(Problem{Kind: kindBGPAdv, Name: adv.Name, Field: field, Reason: ReasonAliasNotFound,
					Message: fmt.Sprintf("no Community object defines the alias %s; the other communities are still attached", c)})
				continue
			}
			value = v
		}
		s, l, err := parseCommunity(value)
		if err != nil {
			ps.add(Problem{Kind: kindBGPAdv, Name: adv.Name, Field: field, Reason: ReasonInvalidField, Message: err.Error()})
			continue
		}
		if l != nil {
			large[*l] = true
		} else {
			std[s] = true
		}
	}
	for c := range std {
		adv.Communities = append(adv.Communities, c)
	}
	sort.Slice(adv.Communities, func(i, j int) bool { return adv.Communities[i] < adv.Communities[j] })
	for c := range large {
		adv.LargeCommunities = append(adv.LargeCommunities, c)
	}
	sort.Slice(adv.LargeCommunities, func(i, j int) bool { return lessLarge(adv.LargeCommunities[i], adv.LargeCommunities[j]) })
}

func lessLarge(a, b [3]uint32) bool {
	for k := 0; k < 3; k++ {
		if a[k] != b[k] {
			return a[k] < b[k]
		}
	}
	return false
}

// isAliasName: an alias starts with a lowercase letter and is not large:...
func isAliasName(s string) bool {
	return s != "" && s[0] >= 'a' && s[0] <= 'z' && !strings.HasPrefix(s, "large:")
}

// ParseCommunity parses "a:b" (16-bit halves) or "large:a:b:c" (32-bit
// parts). It returns the standard value, or the large one.
func ParseCommunity(s string) (uint32, *[3]uint32, error) { return parseCommunity(s) }

func parseCommunity(s string) (uint32, *[3]uint32, error) {
	if rest, ok := strings.CutPrefix(s, "large:"); ok {
		parts := strings.Split(rest, ":")
		if len(parts) != 3 {
			return 0, nil, fmt.Errorf("large community %q: want large:a:b:c", s)
		}
		var l [3]uint32
		for i, p := range parts {
			v, err := strconv.ParseUint(p, 10, 32)
			if err != nil {
				return 0, nil, fmt.Errorf("large community %q: part %q is not a number 0-4294967295", s, p)
			}
			l[i] = uint32(v)
		}
		return 0, &l, nil
	}
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, nil, fmt.Errorf("community %q: want a:b or large:a:b:c", s)
	}
	hi, err1 := strconv.ParseUint(a, 10, 16)
	lo, err2 := strconv.ParseUint(b, 10, 16)
	if err1 != nil || err2 != nil {
		return 0, nil, fmt.Errorf("community %q: each half must be a number 0-65535", s)
	}
	return uint32(hi)<<16 | uint32(lo), nil, nil
}
