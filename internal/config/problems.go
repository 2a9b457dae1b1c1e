package config

import (
	"fmt"
	"sort"
)

// Reasons of problems; they become condition reasons on the objects.
const (
	ReasonInvalidField    = "InvalidField"
	ReasonConflicting     = "Conflicting"
	ReasonPoolNotFound    = "PoolNotFound"
	ReasonPeerNotFound    = "PeerNotFound"
	ReasonSecretNotFound  = "SecretNotFound"
	ReasonBFDNotFound     = "BFDProfileNotFound"
	ReasonAliasNotFound   = "CommunityAliasNotFound"
	ReasonDuplicateAlias  = "DuplicateCommunityAlias"
	ReasonDuplicatePeer   = "DuplicatePeerAddress"
	ReasonLocalPrefOnEBGP = "LocalPrefOnEBGP"
	ReasonAggregation     = "AggregationTooShort"
)

// Problem is something wrong with one object, naming the field.
type Problem struct {
	Kind    string // IPAddressPool, L2Advertisement, BGPPeer, ...
	Name    string
	Field   string // spec.addresses[1]
	Reason  string
	Message string
	// Ignored is true when the whole object was left out of the Config;
	// false when only the named reference was dropped.
	Ignored bool
	// ConflictsWith names the older pool for Conflicting problems, the
	// older peer for DuplicatePeerAddress.
	ConflictsWith string
	// KeptLastValid is true when the object stays in force in its last
	// valid version (see LastGood); the message then says so.
	KeptLastValid bool
}

func (p Problem) Error() string {
	return fmt.Sprintf("%s %s: %s: %s", p.Kind, p.Name, p.Field, p.Message)
}

// ProblemsOf returns the problems of one object.
func ProblemsOf(all []Problem, kind, name string) []Problem {
	var out []Problem
	for _, p := range all {
		if p.Kind == kind && p.Name == name {
			out = append(out, p)
		}
	}
	return out
}

type problems []Problem

func (ps *problems) add(p Problem) { *ps = append(*ps, p) }

func (ps problems) sorted() []Problem {
	out := append([]Problem(nil), ps...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Field < b.Field
	})
	return out
}
