package iprange

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

func mustRange(t testing.TB, first, last string) Range {
	t.Helper()
	return Range{First: netip.MustParseAddr(first), Last: netip.MustParseAddr(last)}
}

func TestParseValid(t *testing.T) {
	cases := []struct {
		in          string
		first, last string
		text        string // String() of the result
	}{
		{"198.51.100.64/27", "198.51.100.64", "198.51.100.95", "198.51.100.64/27"},
		{"198.51.100.7/32", "198.51.100.7", "198.51.100.7", "198.51.100.7/32"},
		{"0.0.0.0/0", "0.0.0.0", "255.255.255.255", "0.0.0.0/0"},
		{"198.51.100.70-198.51.100.80", "198.51.100.70", "198.51.100.80", "198.51.100.70-198.51.100.80"},
		{"198.51.100.5-198.51.100.5", "198.51.100.5", "198.51.100.5", "198.51.100.5/32"},
		{"198.51.100.0-198.51.100.255", "198.51.100.0", "198.51.100.255", "198.51.100.0/24"},
		{"2001:db8:ff::/120", "2001:db8:ff::", "2001:db8:ff::ff", "2001:db8:ff::/120"},
		{"2001:db8::/64", "2001:db8::", "2001:db8::ffff:ffff:ffff:ffff", "2001:db8::/64"},
		{"2001:db8::1-2001:db8::ff", "2001:db8::1", "2001:db8::ff", "2001:db8::1-2001:db8::ff"},
		{"2001:DB8::A-2001:db8::b", "2001:db8::a", "2001:db8::b", "2001:db8::a/127"},
		{"2001:db8::b-2001:db8::c", "2001:db8::b", "2001:db8::c", "2001:db8::b-2001:db8::c"},
		{"2001:db8::/128", "2001:db8::", "2001:db8::", "2001:db8::/128"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			r, err := Parse(c.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", c.in, err)
			}
			if want := mustRange(t, c.first, c.last); r != want {
				t.Errorf("Parse(%q) = %v, want %v", c.in, r, want)
			}
			if got := r.String(); got != c.text {
				t.Errorf("String() = %q, want %q", got, c.text)
			}
		})
	}
}

func TestParseInvalid(t *testing.T) {
	cases := []struct {
		in   string
		want string // substring of the error
	}{
		{"", "empty"},
		{" 198.51.100.0/24", "white space"},
		{"198.51.100.1 - 198.51.100.9", "white space"},
		{"198.51.100.0/24\n", "white space"},
		{"198.51.100.65/27", "did you mean 198.51.100.64/27?"},
		{"2001:db8::1/64", "did you mean 2001:db8::/64?"},
		{"198.51.100.0/33", "not a valid CIDR"},
		{"198.51.100/24", "not a valid CIDR"},
		{"198.51.100.5", "single address; write it as a CIDR (198.51.100.5/32)"},
		{"2001:db8::5", "(2001:db8::5/128)"},
		{"pool-a", "first address"},
		{"nonsense", "neither a CIDR"},
		{"198.51.100.80-198.51.100.70", "first address 198.51.100.80 is above last address 198.51.100.70"},
		{"198.51.100.1-2001:db8::1", "different IP families"},
		{"198.51.100.1-", "last address is missing"},
		{"-198.51.100.1", "first address is missing"},
		{"198.51.100.1-198.51.100.2-198.51.100.3", "more than one '-'"},
		{"198.051.100.1-198.51.100.2", "first address"},
		{"fe80::1%eth0-fe80::2%eth0", "zone"},
		{"fe80::%eth0/64", "zone"},
		{"::ffff:198.51.100.1-::ffff:198.51.100.9", "write the IPv4 range 198.51.100.1-198.51.100.9"},
		{"::ffff:198.51.100.0/120", "write the IPv4 range 198.51.100.0-198.51.100.255"},
		{"::ffff:c633:6400/120", "reads as IPv4"},
		{"::/0", "contains IPv4-mapped IPv6 addresses"},
		{"::ffff:198.51.100.1-198.51.100.9", "different IP families"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			r, err := Parse(c.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want an error containing %q", c.in, r, c.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) {
				t.Errorf("Parse(%q) error %q does not contain %q", c.in, msg, c.want)
			}
			if !strings.Contains(msg, strconv.Quote(c.in)) {
				t.Errorf("Parse(%q) error %q does not quote the input", c.in, msg)
			}
		})
	}
}
