package v1beta1

import (
	"bytes"
	"testing"
)

func TestMemberlistKeyFingerprint(t *testing.T) {
	a, b := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	fa, fb := MemberlistKeyFingerprint(a), MemberlistKeyFingerprint(b)
	if len(fa) != 12 || fa == fb || fa != MemberlistKeyFingerprint(bytes.Clone(a)) {
		t.Errorf("fingerprints %q %q: want 12 hex digits, equal for equal keys only", fa, fb)
	}
}

func TestMemberlistKeysCompatible(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"old", "old", true},
		{"old", "new", false},        // a key replaced in one step: split
		{"old", "old,new", true},     // rotation step 1
		{"new,old", "old,new", true}, // step 2, half rolled
		{"new,old", "old", false},    // step 2 before step 1 reached everyone
		{"new", "new,old", true},     // step 3
		{"new", "old,new", false},    // step 3 before step 2 reached everyone
		{"", "old", true},            // unknown
		{" old , ", "old", true},     // spaces and empty fields
		{"old,new", "new,other", false},
	}
	for _, c := range cases {
		a, b := ParseMemberlistKeys(c.a), ParseMemberlistKeys(c.b)
		if got := MemberlistKeysCompatible(a, b); got != c.want {
			t.Errorf("%q and %q: compatible %v, want %v", c.a, c.b, got, c.want)
		}
		if got := MemberlistKeysCompatible(b, a); got != c.want {
			t.Errorf("%q and %q: not symmetric", c.b, c.a)
		}
	}
}
