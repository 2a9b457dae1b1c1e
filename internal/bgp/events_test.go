package bgp

import "testing"

func TestBFDCaused(t *testing.T) {
	for _, c := range []struct {
		bfd, reason string
		want        bool
	}{
		{"Down", "notification-sent code 6(cease) subcode 4(administrative reset)", true},
		{"", "notification-sent code 6(cease) subcode 4(administrative reset)", true},
		{"Init", "hold timer expired", true},
		{"Up", "notification-sent code 6(cease) subcode 4(administrative reset)", false},
		{"", "hold timer expired", false},
	} {
		if got := bfdCaused(c.bfd, c.reason); got != c.want {
			t.Errorf("bfdCaused(%q, %q) = %v, want %v", c.bfd, c.reason, got, c.want)
		}
	}
}
