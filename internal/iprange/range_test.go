package iprange

import (
	"math"
	"math/big"
	"net/netip"
	"slices"
	"testing"
)

func mustParse(t testing.TB, s string) Range {
	t.Helper()
	r, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestContains(t *testing.T) {
	r := mustParse(t, "198.51.100.10-198.51.100.20")
	for addr, want := range map[string]bool{
		"198.51.100.9": false, "198.51.100.10": true, "198.51.100.15": true,
		"198.51.100.20": true, "198.51.100.21": false,
		"::ffff:198.51.100.15": false, "2001:db8::15": false,
	} {
		if got := r.Contains(netip.MustParseAddr(addr)); got != want {
			t.Errorf("%v.Contains(%s) = %v, want %v", r, addr, got, want)
		}
	}
	v6 := mustParse(t, "2001:db8::/64")
	if !v6.Contains(netip.MustParseAddr("2001:db8::ffff:0:0:1")) || v6.Contains(netip.MustParseAddr("2001:db8:0:1::")) {
		t.Errorf("IPv6 containment wrong")
	}
	if v6.Contains(netip.MustParseAddr("2001:db8::1%eth0")) || v6.Contains(netip.Addr{}) {
		t.Errorf("a zoned or invalid address must never be contained")
	}
}

func TestOverlaps(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"198.51.100.0/28", "198.51.100.15-198.51.100.20", true},
		{"198.51.100.0/28", "198.51.100.16-198.51.100.20", false},
		{"198.51.100.0/24", "198.51.100.7/32", true},
		{"2001:db8::/120", "2001:db8::ff-2001:db8::1ff", true},
		{"2001:db8::/120", "2001:db8::100/120", false},
		{"198.51.100.0/24", "2001:db8::/32", false},
	}
	for _, c := range cases {
		a, b := mustParse(t, c.a), mustParse(t, c.b)
		if a.Overlaps(b) != c.want || b.Overlaps(a) != c.want {
			t.Errorf("Overlaps(%s, %s) != %v", c.a, c.b, c.want)
		}
	}
}

func TestSize(t *testing.T) {
	pow := func(n uint) *big.Int { return new(big.Int).Lsh(big.NewInt(1), n) }
	cases := []struct {
		in   string
		size *big.Int
		u64  uint64
	}{
		{"198.51.100.7/32", big.NewInt(1), 1},
		{"198.51.100.70-198.51.100.80", big.NewInt(11), 11},
		{"0.0.0.0/0", pow(32), 1 << 32},
		{"2001:db8::/120", big.NewInt(256), 256},
		{"2001:db8::/65", pow(63), 1 << 63},
		{"2001:db8::/64", pow(64), math.MaxUint64},
		{"2001:db8::1-2001:db8::ffff:ffff:ffff:ffff", new(big.Int).Sub(pow(64), big.NewInt(1)), math.MaxUint64},
		{"2001:db8::2-2001:db8::ffff:ffff:ffff:ffff", new(big.Int).Sub(pow(64), big.NewInt(2)), math.MaxUint64 - 1},
		{"2001:db8::/32", pow(96), math.MaxUint64},
		{"2001:db8::ffff:ffff:ffff:ffff-2001:db8:0:1::", big.NewInt(2), 2},
	}
	for _, c := range cases {
		r := mustParse(t, c.in)
		if got := r.Size(); got.Cmp(c.size) != 0 {
			t.Errorf("%s: Size() = %v, want %v", c.in, got, c.size)
		}
		if got := r.SizeUint64(); got != c.u64 {
			t.Errorf("%s: SizeUint64() = %v, want %v", c.in, got, c.u64)
		}
	}
	all := Range{First: netip.IPv6Unspecified(), Last: netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")}
	if all.Size().Cmp(pow(128)) != 0 || all.SizeUint64() != math.MaxUint64 {
		t.Errorf("the whole IPv6 space: Size() = %v", all.Size())
	}
}

func TestStringPrefix(t *testing.T) {
	cases := map[string]string{
		"198.51.100.64-198.51.100.95":   "198.51.100.64/27",
		"198.51.100.64-198.51.100.94":   "198.51.100.64-198.51.100.94",
		"198.51.100.65-198.51.100.96":   "198.51.100.65-198.51.100.96",
		"198.51.100.0-198.51.100.1":     "198.51.100.0/31",
		"198.51.100.1-198.51.100.2":     "198.51.100.1-198.51.100.2",
		"2001:db8::-2001:db8::ffff":     "2001:db8::/112",
		"2001:db8::100-2001:db8::1ff":   "2001:db8::100/120",
		"2001:db8::100-2001:db8::2ff":   "2001:db8::100-2001:db8::2ff",
		"0.0.0.0-255.255.255.255":       "0.0.0.0/0",
		"198.51.100.255-198.51.100.255": "198.51.100.255/32",
	}
	for in, want := range cases {
		if got := mustParse(t, in).String(); got != want {
			t.Errorf("String(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestCompareOrder(t *testing.T) {
	in := []string{"2001:db8::/120", "198.51.100.64/27", "198.51.100.64/28", "198.51.100.0/27", "2001:db8::/64"}
	var rs []Range
	for _, s := range in {
		rs = append(rs, mustParse(t, s))
	}
	slices.SortFunc(rs, Range.Compare)
	var got []string
	for _, r := range rs {
		got = append(got, r.String())
	}
	want := []string{"198.51.100.0/27", "198.51.100.64/28", "198.51.100.64/27", "2001:db8::/120", "2001:db8::/64"}
	if !slices.Equal(got, want) {
		t.Errorf("sorted = %v, want %v", got, want)
	}
}

func TestMerge(t *testing.T) {
	in := []Range{
		mustParse(t, "2001:db8::100/120"), mustParse(t, "198.51.100.16/28"),
		mustParse(t, "198.51.100.0/28"), mustParse(t, "198.51.100.40-198.51.100.50"),
		mustParse(t, "198.51.100.45-198.51.100.47"), mustParse(t, "2001:db8::/120"),
		mustParse(t, "198.51.100.255/32"),
	}
	var got []string
	for _, r := range Merge(in) {
		got = append(got, r.String())
	}
	want := []string{"198.51.100.0/27", "198.51.100.40-198.51.100.50", "198.51.100.255/32", "2001:db8::/119"}
	if !slices.Equal(got, want) {
		t.Errorf("Merge = %v, want %v", got, want)
	}
	last4 := mustParse(t, "255.255.255.255/32")
	if m := Merge([]Range{last4, mustParse(t, "::/128")}); len(m) != 2 {
		t.Errorf("the last IPv4 address must not join the first IPv6 one: %v", m)
	}
}

func TestIsValid(t *testing.T) {
	if (Range{}).IsValid() {
		t.Error("zero Range is valid")
	}
	a, b := netip.MustParseAddr("198.51.100.9"), netip.MustParseAddr("198.51.100.1")
	if (Range{First: a, Last: b}).IsValid() {
		t.Error("reversed Range is valid")
	}
	if !(Range{First: b, Last: a}).IsValid() {
		t.Error("ordered Range is invalid")
	}
	if (Range{First: b, Last: netip.MustParseAddr("2001:db8::1")}).IsValid() {
		t.Error("mixed-family Range is valid")
	}
}
