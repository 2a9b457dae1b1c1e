package speaker

import (
	"slices"
	"testing"
)

func TestKeyMismatch(t *testing.T) {
	own := []string{"new"}
	peers := map[string][]string{
		"node3": {"old"},        // a key replaced in one step
		"node2": {"old", "new"}, // rotation step 1 there, sends with old
		"node4": {"new", "old"},
		"node5": {"new"},
	}
	if got := keyMismatch(own, peers); !slices.Equal(got, []string{"node2", "node3"}) {
		t.Errorf("mismatch %v, want [node2 node3] (sorted)", got)
	}
	if got := keyMismatch([]string{"old", "new"}, peers); !slices.Equal(got, []string{"node5"}) {
		t.Errorf("mismatch %v, want [node5]", got)
	}
	if got := keyMismatch(own, nil); len(got) != 0 {
		t.Errorf("no peers read: %v", got)
	}
}

func TestLeaseAnnotationsCarryTheKeys(t *testing.T) {
	r := &leaseRenewer{keys: "aa,bb"}
	got := r.annotations(map[string]string{"other": "x"})
	if got["herald.dev/memberlist-keys"] != "aa,bb" || got["other"] != "x" {
		t.Errorf("annotations %v", got)
	}
	r.keys = ""
	if got := r.annotations(map[string]string{"herald.dev/memberlist-keys": "aa", "other": "x"}); len(got) != 1 || got["other"] != "x" {
		t.Errorf("a speaker without keys removes the annotation: %v", got)
	}
	if got := r.annotations(nil); got != nil {
		t.Errorf("nothing to write: %v", got)
	}
}
