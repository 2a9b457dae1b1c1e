package announced

import (
	"cmp"
	"hash/maphash"
	"maps"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// Tracker remembers, between syncs, what the Announced conditions were
// computed from and what they said. It is safe for concurrent use.
type Tracker struct {
	mu sync.Mutex
	// up are the nodes whose speaker Lease was fresh when last seen.
	up map[string]bool
	// deps are the nodes each Service's condition was computed from;
	// dependents the Services that depend on each node (its inverse).
	deps       map[cache.ObjectName][]string
	dependents map[string]map[cache.ObjectName]bool
	// lastTrue is a hash (seed) of what each Service's condition said
	// when it was last True, kept while the condition waits (Unknown) for
	// a new owner to confirm it took the address: the Service's status
	// no longer shows it then.
	lastTrue map[cache.ObjectName]uint64
	seed     maphash.Seed
}

// NewTracker returns a Tracker that remembers nothing.
func NewTracker() *Tracker {
	return &Tracker{up: map[string]bool{}, deps: map[cache.ObjectName][]string{},
		dependents: map[string]map[cache.ObjectName]bool{}, lastTrue: map[cache.ObjectName]uint64{}, seed: maphash.MakeSeed()}
}

// SpeakerSeen records whether a node's speaker is alive now. When that
// changed (a node first seen down counts as no change), it returns the
// Services whose condition depends on the node, sorted.
func (t *Tracker) SpeakerSeen(node string, alive bool) (changed bool, services []cache.ObjectName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	was, known := t.up[node]
	if alive {
		t.up[node] = true
	} else {
		delete(t.up, node)
	}
	if known && was == alive || !known && !alive {
		return false, nil
	}
	return true, slices.SortedFunc(maps.Keys(t.dependents[node]), compareNames)
}

// DependOn records the nodes a Service's condition was computed from
// (expected owners and reporters); none forgets the Service.
func (t *Tracker) DependOn(key cache.ObjectName, nodes []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, n := range t.deps[key] {
		if !slices.Contains(nodes, n) {
			delete(t.dependents[n], key)
			if len(t.dependents[n]) == 0 {
				delete(t.dependents, n)
			}
		}
	}
	if len(nodes) == 0 {
		delete(t.deps, key)
		return
	}
	t.deps[key] = nodes
	for _, n := range nodes {
		if t.dependents[n] == nil {
			t.dependents[n] = map[cache.ObjectName]bool{}
		}
		t.dependents[n][key] = true
	}
}

// NoteTrue remembers what the condition said when last True, through
// any Unknown (a new owner not yet confirmed) or False (an owner's
// speaker down, no eligible node) that follows, and reports whether now
// is True and says something else. Without a memory (a new leader) the
// Service's current condition prev, if True, is the last.
func (t *Tracker) NoteTrue(key cache.ObjectName, prev *metav1.Condition, now metav1.ConditionStatus, message string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	last, had := t.lastTrue[key]
	if !had && prev != nil && prev.Status == metav1.ConditionTrue {
		last, had = maphash.String(t.seed, prev.Message), true
		t.lastTrue[key] = last
	}
	if now != metav1.ConditionTrue {
		return false
	}
	h := maphash.String(t.seed, message)
	t.lastTrue[key] = h
	return had && h != last
}

// ForgetTrue forgets what a Service's condition said when last True (it
// lost its addresses, was deleted or is no longer Herald's).
func (t *Tracker) ForgetTrue(key cache.ObjectName) {
	t.mu.Lock()
	delete(t.lastTrue, key)
	t.mu.Unlock()
}

// Remembered is how many Services' last True conditions it remembers.
func (t *Tracker) Remembered() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.lastTrue)
}

func compareNames(a, b cache.ObjectName) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}
