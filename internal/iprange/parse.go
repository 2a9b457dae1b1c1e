package iprange

import (
	"fmt"
	"net/netip"
	"strings"
	"unicode"
)

// mappedPrefix returns ::ffff:0:0/96, the IPv4-mapped IPv6 addresses.
func mappedPrefix() netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff}), 96)
}

// Parse reads one entry of IPAddressPool.spec.addresses: a CIDR
// ("198.51.100.64/27", "2001:db8:ff::/120") or an inclusive range
// "first-last" ("198.51.100.70-198.51.100.80"). Errors quote the input and
// say what is wrong.
func Parse(s string) (Range, error) {
	r, err := parse(s)
	if err != nil {
		return Range{}, fmt.Errorf("address range %q: %w", s, err)
	}
	return r, nil
}

func parse(s string) (Range, error) {
	if s == "" {
		return Range{}, fmt.Errorf("empty; write a CIDR such as 198.51.100.0/27 or a range such as 198.51.100.10-198.51.100.20")
	}
	if strings.ContainsFunc(s, unicode.IsSpace) {
		return Range{}, fmt.Errorf("contains white space")
	}
	if strings.Contains(s, "%") {
		return Range{}, fmt.Errorf("has an IPv6 zone (%%...); pool addresses are global, write them without a zone")
	}
	var r Range
	var err error
	switch {
	case strings.Contains(s, "/"):
		r, err = parseCIDR(s)
	case strings.Contains(s, "-"):
		r, err = parseFirstLast(s)
	default:
		if a, perr := netip.ParseAddr(s); perr == nil {
			return Range{}, fmt.Errorf("is a single address; write it as a CIDR (%s/%d) or a range", a, a.BitLen())
		}
		return Range{}, fmt.Errorf("is neither a CIDR (198.51.100.0/27) nor a range first-last (198.51.100.10-198.51.100.20)")
	}
	if err != nil {
		return Range{}, err
	}
	return r, checkMapped(r)
}

func parseCIDR(s string) (Range, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return Range{}, fmt.Errorf("not a valid CIDR: %w", err)
	}
	if m := p.Masked(); m != p {
		return Range{}, fmt.Errorf("host bits are set; did you mean %s?", m)
	}
	return FromPrefix(p), nil
}

func parseFirstLast(s string) (Range, error) {
	firstText, lastText, _ := strings.Cut(s, "-")
	if strings.Contains(lastText, "-") {
		return Range{}, fmt.Errorf("has more than one '-'; write first-last")
	}
	first, err := parseEnd("first", firstText)
	if err != nil {
		return Range{}, err
	}
	last, err := parseEnd("last", lastText)
	if err != nil {
		return Range{}, err
	}
	if first.Is4() != last.Is4() {
		return Range{}, fmt.Errorf("first address %s and last address %s are of different IP families", first, last)
	}
	if first.Compare(last) > 0 {
		return Range{}, fmt.Errorf("first address %s is above last address %s", first, last)
	}
	return Range{First: first, Last: last}, nil
}

func parseEnd(which, text string) (netip.Addr, error) {
	if text == "" {
		return netip.Addr{}, fmt.Errorf("%s address is missing; write first-last", which)
	}
	a, err := netip.ParseAddr(text)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%s address: %w", which, err)
	}
	return a, nil
}

// checkMapped refuses ranges that touch ::ffff:0:0/96 (see the package
// comment for why).
func checkMapped(r Range) error {
	if r.Is4() || !r.Overlaps(FromPrefix(mappedPrefix())) {
		return nil
	}
	if r.First.Is4In6() && r.Last.Is4In6() {
		return fmt.Errorf("uses IPv4-mapped IPv6 addresses, which Kubernetes reads as IPv4; write the IPv4 range %s-%s",
			r.First.Unmap(), r.Last.Unmap())
	}
	return fmt.Errorf("contains IPv4-mapped IPv6 addresses (%s), which Kubernetes reads as IPv4; leave them out", mappedPrefix())
}
