package labkit

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
)

// Ranges are the only address ranges a lab uses.
func Ranges() []netip.Prefix {
	return []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("2001:db8::/32")}
}

// InRange reports whether a is inside one of the lab's ranges.
func InRange(a netip.Addr) bool {
	a = a.Unmap()
	return slices.ContainsFunc(Ranges(), func(p netip.Prefix) bool { return p.Contains(a) })
}

// OverlapsRanges reports whether p is at least as specific as a lab range
// and overlaps it (a default route does not count).
func OverlapsRanges(p netip.Prefix) bool {
	return slices.ContainsFunc(Ranges(), func(r netip.Prefix) bool { return p.Bits() >= r.Bits() && r.Overlaps(p) })
}

// RootLegStem begins the name of the one link a real-cluster lab
// (e2e/lab) puts in the root namespace: herald<4-character run id>.
const RootLegStem = "herald"

// isRootLeg reports whether dev is a real-cluster lab's root leg.
func isRootLeg(dev string) bool {
	id, ok := strings.CutPrefix(dev, RootLegStem)
	return ok && len(id) == 4 && strings.Trim(id, "abcdefghijklmnopqrstuvwxyz0123456789") == ""
}

// CheckRootNamespace returns an error naming what it found when the lab's
// ranges are already configured (addresses or routes) in the root
// namespace: a lab there (or a crashed one) would collide with a new one,
// and on these machines such a route could mean the uplink itself. With
// allowLabLegs, what is on a real-cluster lab's root leg does not count
// (for labs that never touch the root namespace).
func CheckRootNamespace(ctx context.Context, allowLabLegs bool) error {
	var found []string
	ifaces, err := net.Interfaces()
	if err != nil {
		return fmt.Errorf("listing interfaces: %w", err)
	}
	for _, ifi := range ifaces {
		if allowLabLegs && isRootLeg(ifi.Name) {
			continue
		}
		addrs, _ := ifi.Addrs()
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && InRange(p.Addr()) {
				found = append(found, fmt.Sprintf("address %s on %s", p, ifi.Name))
			}
		}
	}
	for _, fam := range []string{"-4", "-6"} {
		out, err := exec.CommandContext(ctx, "ip", fam, "-j", "route", "show", "table", "all").Output()
		if err != nil {
			return fmt.Errorf("ip %s route show table all: %w", fam, err)
		}
		var routes []struct{ Dst, Dev string }
		if err := json.Unmarshal(out, &routes); err != nil {
			return fmt.Errorf("parsing ip route: %w", err)
		}
		for _, r := range routes {
			if allowLabLegs && isRootLeg(r.Dev) {
				continue
			}
			if p, ok := ParseRouteDst(r.Dst); ok && OverlapsRanges(p) {
				found = append(found, fmt.Sprintf("route %s dev %s", r.Dst, r.Dev))
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	slices.Sort(found)
	found = slices.Compact(found)
	return fmt.Errorf("the lab's ranges (198.51.100.0/24, 2001:db8::/32) are already in use in the root namespace:\n  %s\n"+
		"a lab (or a crashed one) is probably still up: run `make lab-down` and try again", strings.Join(found, "\n  "))
}

// ParseRouteDst reads the dst of `ip -j route` ("default", an address or
// a prefix).
func ParseRouteDst(dst string) (netip.Prefix, bool) {
	if dst == "" || dst == "default" {
		return netip.Prefix{}, false
	}
	if !strings.Contains(dst, "/") {
		a, err := netip.ParseAddr(dst)
		if err != nil {
			return netip.Prefix{}, false
		}
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	p, err := netip.ParsePrefix(dst)
	return p, err == nil
}
