package controller

import "testing"

func TestPlanMemberlist(t *testing.T) {
	key, other := []byte("key"), []byte("other")
	cases := []struct {
		name            string
		current, known  []byte
		speakersWithKey int
		want            memberlistPlan
	}{
		{"a key in place is kept", key, nil, 0, memberlistKeep},
		{"a key in place wins over the remembered one (the operator's)", other, key, 3, memberlistKeep},
		{"deleted while known: the same key back", nil, key, 3, memberlistRestore},
		{"deleted while known, no speaker: the same key back", nil, key, 0, memberlistRestore},
		{"emptied while known: the same key back", []byte{}, key, 3, memberlistRestore},
		{"fresh install: a new key", nil, nil, 0, memberlistNewKey},
		{"missing, speakers hold a key never seen: wait", nil, nil, 1, memberlistWait},
		{"emptied, speakers hold a key never seen: wait", []byte{}, nil, 5, memberlistWait},
	}
	for _, c := range cases {
		if got := planMemberlist(c.current, c.known, c.speakersWithKey); got != c.want {
			t.Errorf("%s: plan %d, want %d", c.name, got, c.want)
		}
	}
}
