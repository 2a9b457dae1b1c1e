package config

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/herald-lb/herald/api/v1beta1"
)

// Reasons of the problems LastGood adds.
const (
	// ReasonOverlapsPoolInUse: an edited pool now overlaps a pool that is
	// in use; the edit is refused, whichever pool is older.
	ReasonOverlapsPoolInUse = "OverlapsPoolInUse"
	// ReasonDuplicatesPeerInUse: an edited peer now duplicates a peer in use.
	ReasonDuplicatesPeerInUse = "DuplicatesPeerInUse"
)

// keptSuffix ends the message of a problem whose object stays in force in
// its last valid version.
const keptSuffix = "; keeping the last valid version"

// LastGood remembers the last valid version of every object, so that an
// edit the API server accepts but Build refuses never withdraws what that
// object put in force: the object stays in its last valid version, and its
// problems say so ("keeping the last valid version"). An object that was
// never valid is left out, as Build alone does.
//
// Build stays pure; LastGood is the memory around it. The controller and the
// speaker each hold one, so both keep the same versions in force. The memory
// is seeded from the record the controller writes in each object's status
// (status.inForce, see seed): a process that (re)starts while an edit is
// refused keeps the same version as the ones that ran through the edit.
// Password Secrets are not recorded: a peer whose Secret is missing or
// lacks its key when a process starts is left out by that process.
type LastGood struct {
	mu      sync.Mutex
	good    map[objKey]metav1.Object  // last valid version, by kind and name
	secrets map[string]*corev1.Secret // password Secrets of last valid peers
}

type objKey struct{ kind, name string }

// NewLastGood returns an empty memory.
func NewLastGood() *LastGood {
	return &LastGood{good: map[objKey]metav1.Object{}, secrets: map[string]*corev1.Secret{}}
}

// Build builds the configuration from in, putting the last valid version
// of each refused object in its place, and remembers the versions that are
// valid now. Problems of kept objects end with "keeping the last valid
// version" and are not Ignored.
func (g *LastGood) Build(in Input) (*Config, []Problem) {
	g.mu.Lock()
	defer g.mu.Unlock()
	cur := copyInput(in)
	g.forgetGone(cur)
	g.seed(cur)
	kept := map[objKey][]Problem{}
	limit := inputSize(cur) + 1
	for round := 0; ; round++ {
		cfg, ps := Build(cur)
		if round >= limit || !g.substitute(&cur, ps, kept) {
			g.remember(cur, ps, kept)
			return cfg, mergeKept(ps, kept)
		}
	}
}

// substitute replaces, for each Ignored problem not handled yet, the object
// to blame by its last valid version (or leaves it out when it has none).
// It reports whether the input changed.
func (g *LastGood) substitute(cur *Input, ps []Problem, kept map[objKey][]Problem) bool {
	changed := false
	for _, p := range ps {
		if !p.Ignored {
			continue
		}
		k := objKey{p.Kind, p.Name}
		if _, done := kept[k]; done {
			continue
		}
		if other, blame := g.blameOther(*cur, p); blame {
			ok := objKey{p.Kind, p.ConflictsWith}
			if _, done := kept[ok]; done {
				continue
			}
			kept[ok] = []Problem{other}
			setObject(cur, ok, g.lastValid(*cur, ok))
			g.restoreSecret(cur, ok)
			changed = true
			continue
		}
		last := g.lastValid(*cur, k)
		if last == nil {
			continue // never valid: left out, as Build decided
		}
		restored := g.restoreSecret(cur, k)
		if unchanged(objectOf(*cur, k), last) && !restored {
			continue // refused for a reason its last version has too
		}
		setObject(cur, k, last)
		p.Ignored = false
		kept[k] = append(kept[k], p)
		changed = true
	}
	return changed
}

// blameOther decides, for a Conflicting or duplicate problem, whether the
// other object is to blame: this one is unchanged since it was valid and
// the other one changed or is new. It returns the problem to report on the
// other object.
func (g *LastGood) blameOther(cur Input, p Problem) (Problem, bool) {
	if p.ConflictsWith == "" || (p.Reason != ReasonConflicting && p.Reason != ReasonDuplicatePeer) {
		return Problem{}, false
	}
	k, ok := objKey{p.Kind, p.Name}, objKey{p.Kind, p.ConflictsWith}
	last := g.lastValid(cur, k)
	if last == nil || !unchanged(objectOf(cur, k), last) {
		return Problem{}, false
	}
	if otherLast := g.lastValid(cur, ok); otherLast != nil && unchanged(objectOf(cur, ok), otherLast) {
		return Problem{}, false
	}
	q := Problem{Kind: p.Kind, Name: p.ConflictsWith, Field: "spec.addresses", Reason: ReasonOverlapsPoolInUse,
		Message: fmt.Sprintf("addresses overlap IPAddressPool %s, which is in use", p.Name)}
	if p.Kind == kindPeer {
		q.Field, q.Reason = "spec.peerAddress", ReasonDuplicatesPeerInUse
		q.Message = fmt.Sprintf("BGPPeer %s, which is in use, already peers with this address from the same nodes", p.Name)
	}
	if g.lastValid(cur, ok) == nil {
		q.Ignored = true
		q.Message += "; this object is left out until the overlap is removed"
	}
	return q, true
}

// lastValid returns the remembered version of the object with the same
// UID as the current one, or nil.
func (g *LastGood) lastValid(cur Input, k objKey) metav1.Object {
	last, ok := g.good[k]
	obj := objectOf(cur, k)
	if !ok || obj == nil || last.GetUID() != obj.GetUID() {
		return nil
	}
	return last
}

func unchanged(cur, last metav1.Object) bool {
	return cur != nil && cur.GetGeneration() == last.GetGeneration()
}

// restoreSecret puts the remembered password Secret of a peer back into
// the input when it is missing or lacks its key, and reports whether it did.
func (g *LastGood) restoreSecret(cur *Input, k objKey) bool {
	last, ok := g.good[k].(*v1beta1.BGPPeer)
	if k.kind != kindPeer || !ok || last.Spec.PasswordSecret == "" {
		return false
	}
	name := last.Spec.PasswordSecret
	s, ok := g.secrets[name]
	if !ok {
		return false
	}
	out := make([]*corev1.Secret, 0, len(cur.Secrets)+1)
	for _, x := range cur.Secrets {
		if x.Name != name {
			out = append(out, x)
		} else if len(x.Data[PasswordKey]) > 0 {
			return false // present and usable: nothing to restore
		}
	}
	cur.Secrets = append(out, s)
	return true
}

// remember records every object in force in its current version.
func (g *LastGood) remember(cur Input, ps []Problem, kept map[objKey][]Problem) {
	ignored := map[objKey]bool{}
	for _, p := range ps {
		if p.Ignored {
			ignored[objKey{p.Kind, p.Name}] = true
		}
	}
	secrets := map[string]*corev1.Secret{}
	for _, s := range cur.Secrets {
		secrets[s.Name] = s
	}
	eachObject(cur, func(k objKey, obj metav1.Object) {
		if ignored[k] {
			return
		}
		if _, wasKept := kept[k]; !wasKept {
			g.good[k] = obj
		}
		if p, ok := obj.(*v1beta1.BGPPeer); ok && p.Spec.PasswordSecret != "" && secrets[p.Spec.PasswordSecret] != nil {
			g.secrets[p.Spec.PasswordSecret] = secrets[p.Spec.PasswordSecret]
		}
	})
}

// forgetGone drops the memory of deleted (or recreated) objects and of
// Secrets no remembered peer names.
func (g *LastGood) forgetGone(cur Input) {
	uids := map[objKey]types.UID{}
	eachObject(cur, func(k objKey, obj metav1.Object) { uids[k] = obj.GetUID() })
	named := map[string]bool{}
	for k, obj := range g.good {
		if uid, ok := uids[k]; !ok || uid != obj.GetUID() {
			delete(g.good, k)
			continue
		}
		if p, ok := obj.(*v1beta1.BGPPeer); ok {
			named[p.Spec.PasswordSecret] = true
		}
	}
	for name := range g.secrets {
		if !named[name] {
			delete(g.secrets, name)
		}
	}
}

// mergeKept adds the problems of kept objects, marked as such, to ps.
func mergeKept(ps []Problem, kept map[objKey][]Problem) []Problem {
	out := append([]Problem(nil), ps...)
	ignored := map[objKey]bool{}
	for _, p := range ps {
		if p.Ignored {
			ignored[objKey{p.Kind, p.Name}] = true
		}
	}
	for k, list := range kept {
		for _, p := range list {
			if !p.Ignored && !ignored[k] {
				p.Message += keptSuffix
				p.KeptLastValid = true
			}
			out = append(out, p)
		}
	}
	return problems(out).sorted()
}
