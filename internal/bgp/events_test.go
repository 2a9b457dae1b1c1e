package bgp

import (
	"testing"

	bgppkt "github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// GoBGP's words for a Cease/administrative reset it sent
var sentReset = "notification-sent " + bgppkt.NewNotificationErrorCode(bgppkt.BGP_ERROR_CEASE, bgppkt.BGP_ERROR_SUB_ADMINISTRATIVE_RESET).String()

func TestBFDCaused(t *testing.T) {
	for _, c := range []struct {
		bfd, reason string
		own         bool
		want        bool
	}{
		{"Down", sentReset, false, true},
		{"", sentReset, false, true},
		// GoBGP resets the session before it marks BFD down (CI)
		{"Up", sentReset, false, true},
		// the speaker's own reset (graceful restart at shutdown)
		{"Up", sentReset, true, false},
		{"Down", sentReset, true, false},
		{"Init", "hold timer expired", false, true},
		{"", "hold timer expired", false, false},
		{"Up", "hold timer expired", false, false},
		// the router's operator cleared the session
		{"Up", "notification-received " + bgppkt.NewNotificationErrorCode(bgppkt.BGP_ERROR_CEASE, bgppkt.BGP_ERROR_SUB_ADMINISTRATIVE_RESET).String(), false, false},
	} {
		if got := bfdCaused(c.bfd, c.reason, c.own); got != c.want {
			t.Errorf("bfdCaused(%q, %q, own %v) = %v, want %v", c.bfd, c.reason, c.own, got, c.want)
		}
	}
}
