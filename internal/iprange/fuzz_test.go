package iprange

import (
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"198.51.100.64/27", "198.51.100.70-198.51.100.80", "0.0.0.0/0", "198.51.100.5/32",
		"2001:db8:ff::/120", "2001:db8::1-2001:db8::ff", "2001:db8::/64", "::/0", "::1/128",
		"198.51.100.65/27", "198.51.100.80-198.51.100.70", "198.51.100.1-2001:db8::1",
		"fe80::1%eth0-fe80::2", "::ffff:198.51.100.1-::ffff:198.51.100.9", " 198.51.100.0/24",
		"198.51.100.5", "", "-", "/", "1-2-3", "2001:db8::ffff:ffff:ffff:ffff-2001:db8:0:1::",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			if !strings.Contains(err.Error(), "address range") {
				t.Fatalf("Parse(%q): error %q does not name the input", s, err)
			}
			return
		}
		checkParsed(t, s, r)
	})
}

func checkParsed(t *testing.T, s string, r Range) {
	t.Helper()
	if !r.IsValid() {
		t.Fatalf("Parse(%q) = %#v: not a valid range", s, r)
	}
	if r.First.Is4() != r.Last.Is4() || r.First.Compare(r.Last) > 0 {
		t.Fatalf("Parse(%q) = %v: families differ or first > last", s, r)
	}
	back, err := Parse(r.String())
	if err != nil || back != r {
		t.Fatalf("Parse(%q) = %v, but Parse(%q) = %v, %v", s, r, r.String(), back, err)
	}
	if !r.Contains(r.First) || !r.Contains(r.Last) {
		t.Fatalf("%v does not contain its own ends", r)
	}
	if r.SizeUint64() == 0 || r.Size().Sign() <= 0 {
		t.Fatalf("%v has size %v", r, r.Size())
	}
	if !r.Overlaps(r) {
		t.Fatalf("%v does not overlap itself", r)
	}
}
