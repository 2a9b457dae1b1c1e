package migrate

import (
	"fmt"
	"sort"
	"strings"
)

// ref is a namespaced MetalLB name.
type ref struct{ Namespace, Name string }

// clusterNames gives each namespaced name a cluster-scoped one that no
// other takes: the name itself when no other namespace uses it (so that
// Services' address-pool annotations and references keep working),
// otherwise namespace-name; a numeric suffix settles what is left.
// sanitize makes a name valid for the Herald field (nil: keep).
func clusterNames(refs []ref, sanitize func(string) string) map[ref]string {
	if sanitize == nil {
		sanitize = func(s string) string { return s }
	}
	sorted := append([]ref(nil), refs...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Name != sorted[j].Name {
			return sorted[i].Name < sorted[j].Name
		}
		return sorted[i].Namespace < sorted[j].Namespace
	})
	spaces := map[string]map[string]bool{}
	for _, r := range sorted {
		n := sanitize(r.Name)
		if spaces[n] == nil {
			spaces[n] = map[string]bool{}
		}
		spaces[n][r.Namespace] = true
	}
	out := map[ref]string{}
	taken := map[string]bool{}
	// Names kept as they are go first, so a prefixed name never takes one.
	for pass := 0; pass < 2; pass++ {
		for _, r := range sorted {
			if _, done := out[r]; done {
				continue
			}
			base := sanitize(r.Name)
			shared := len(spaces[base]) > 1
			if (pass == 0) == shared {
				continue
			}
			if shared {
				base = sanitize(r.Namespace + "-" + r.Name)
			}
			name := base
			for i := 2; taken[name]; i++ {
				name = fmt.Sprintf("%s-%d", trimName(base, 240), i)
			}
			taken[name] = true
			out[r] = name
		}
	}
	return out
}

// trimName cuts a name to n characters without leaving a separator last.
func trimName(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.TrimRight(s, "-.")
}

// objectName keeps a Kubernetes object name valid (253 characters).
func objectName(s string) string { return trimName(s, 253) }

// aliasName makes a MetalLB community alias a valid Herald alias: lower
// case letters, digits and dashes, starting with a letter, at most 63.
func aliasName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	for strings.Contains(out, "--") {
		out = strings.ReplaceAll(out, "--", "-")
	}
	if out == "" || out[0] < 'a' || out[0] > 'z' {
		out = "c-" + out
	}
	return trimName(out, 63)
}
