package allocator

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/herald-lb/herald/internal/service"
)

// admits reports whether the pool lets req's Service take new addresses
// from it (autoAssign aside) and, if not, why.
func (p *poolState) admits(req *service.Request) (bool, string) {
	switch {
	case p.Closed:
		return false, "it is being deleted"
	case len(p.Namespaces) > 0 && !slices.Contains(p.Namespaces, req.Namespace):
		return false, fmt.Sprintf("namespace %s is not in its namespaces", req.Namespace)
	case len(p.NamespaceSelectors) > 0 && !anyMatches(p.NamespaceSelectors, req.NamespaceLabels):
		return false, fmt.Sprintf("namespace %s matches none of its namespaceSelectors", req.Namespace)
	case len(p.ServiceSelectors) > 0 && !anyMatches(p.ServiceSelectors, req.Labels):
		return false, "the Service's labels match none of its serviceSelectors"
	}
	return true, ""
}

func anyMatches(sels []labels.Selector, set labels.Set) bool {
	return slices.ContainsFunc(sels, func(s labels.Selector) bool { return s.Matches(set) })
}

// candidates returns, in order, the pools that may give req new addresses
// of every family in fams. When there are none, the error says why, pool
// by pool.
func (s *poolSet) candidates(req *service.Request, fams []corev1.IPFamily) ([]*poolState, error) {
	if req.Pool != "" {
		return s.namedCandidate(req, fams)
	}
	var out []*poolState
	var why []string
	for _, p := range s.ordered {
		if reason := p.refusal(req, fams, true); reason != "" {
			why = append(why, fmt.Sprintf("pool %s: %s", p.Name, reason))
			continue
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fail(NoPoolMatches, noPoolMessage(req, fams, why))
	}
	return out, nil
}

func (s *poolSet) namedCandidate(req *service.Request, fams []corev1.IPFamily) ([]*poolState, error) {
	p, ok := s.byName[req.Pool]
	if !ok {
		return nil, fail(PoolNotFound, fmt.Sprintf("Service %s names address pool %s, which does not exist", req.Key, req.Pool))
	}
	if ok, why := p.admits(req); !ok {
		return nil, fail(PoolNotAllowed, fmt.Sprintf("Service %s names address pool %s, but %s", req.Key, req.Pool, why))
	}
	if reason := p.refusal(req, fams, false); reason != "" {
		return nil, fail(NoPoolMatches, fmt.Sprintf("Service %s names address pool %s, but %s", req.Key, req.Pool, reason))
	}
	return []*poolState{p}, nil
}

// refusal says why p may not give req new addresses of fams ("" if it
// may).
func (p *poolState) refusal(req *service.Request, fams []corev1.IPFamily, needAuto bool) string {
	if needAuto && !p.AutoAssign {
		return "autoAssign is off"
	}
	if ok, why := p.admits(req); !ok {
		return why
	}
	for _, f := range fams {
		if !p.hasFamily(f) {
			return fmt.Sprintf("it has no %s addresses", f)
		}
	}
	return ""
}

func noPoolMessage(req *service.Request, fams []corev1.IPFamily, why []string) string {
	msg := fmt.Sprintf("no address pool may give Service %s %s addresses", req.Key, familyWords(fams))
	if len(why) == 0 {
		return msg + ": no pool is configured"
	}
	const shown = 5
	if len(why) > shown {
		why = append(why[:shown:shown], fmt.Sprintf("%d more", len(why)-shown))
	}
	return msg + " (" + strings.Join(why, "; ") + ")"
}

func familyWords(fams []corev1.IPFamily) string {
	words := make([]string, len(fams))
	for i, f := range fams {
		words[i] = string(f)
	}
	return strings.Join(words, " and ")
}
