package members

import (
	"net/netip"
	"testing"
)

func TestParseJoinAddr(t *testing.T) {
	cases := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"198.51.100.7", "198.51.100.7:7947", false},
		{"198.51.100.7:8000", "198.51.100.7:8000", false},
		{"2001:db8::7", "[2001:db8::7]:7947", false},
		{"[2001:db8::7]:8000", "[2001:db8::7]:8000", false},
		{"::ffff:198.51.100.7", "198.51.100.7:7947", false},
		{"node-1.example", "", true},
		{"", "", true},
	}
	for _, tc := range cases {
		got, err := parseJoinAddr(tc.in, 7947)
		if (err != nil) != tc.wantErr {
			t.Errorf("%q: error %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if err == nil && got != netip.MustParseAddrPort(tc.want) {
			t.Errorf("%q: got %v, want %v", tc.in, got, tc.want)
		}
	}
}
