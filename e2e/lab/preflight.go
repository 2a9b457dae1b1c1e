package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// labRanges are the only ranges the lab uses.
func labRanges() []netip.Prefix {
	return []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("2001:db8::/32")}
}

func inLabRange(a netip.Addr) bool {
	a = a.Unmap()
	return slices.ContainsFunc(labRanges(), func(p netip.Prefix) bool { return p.Contains(a) })
}

// overlapsLab: a prefix at least as specific as a lab range that
// overlaps it (a default route does not count).
func overlapsLab(p netip.Prefix) bool {
	return slices.ContainsFunc(labRanges(), func(r netip.Prefix) bool { return p.Bits() >= r.Bits() && r.Overlaps(p) })
}

// checkRootNamespace refuses to start when the lab's ranges are already
// configured (addresses or routes) in the root namespace.
func checkRootNamespace(ctx context.Context) error {
	var found []string
	ifaces, err := net.Interfaces()
	if err != nil {
		return fmt.Errorf("listing interfaces: %w", err)
	}
	for _, ifi := range ifaces {
		addrs, _ := ifi.Addrs()
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && inLabRange(p.Addr()) {
				found = append(found, fmt.Sprintf("address %s on %s", p, ifi.Name))
			}
		}
	}
	for _, fam := range []string{"-4", "-6"} {
		out, err := run(ctx, "ip", fam, "-j", "route", "show", "table", "all")
		if err != nil {
			return err
		}
		var routes []struct{ Dst, Dev string }
		if err := json.Unmarshal([]byte(out), &routes); err != nil {
			return fmt.Errorf("parsing ip route: %w", err)
		}
		for _, r := range routes {
			if p, ok := parseRouteDst(r.Dst); ok && overlapsLab(p) {
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

func parseRouteDst(dst string) (netip.Prefix, bool) {
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

// checkRegistries refuses to start when a package registry host resolves
// into the lab's ranges: the lab would cut the machine off from it.
func checkRegistries(ctx context.Context) error {
	for _, host := range registryHosts() {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		addrs, err := net.DefaultResolver.LookupNetIP(rctx, "ip", host)
		cancel()
		if err != nil {
			continue // not resolvable here: nothing the lab could break
		}
		for _, a := range addrs {
			if inLabRange(a) {
				return fmt.Errorf("package registry %s resolves to %s, inside the lab's ranges: starting the lab would cut this machine off from it; refusing", host, a)
			}
		}
	}
	return nil
}

// registryHosts: Debian's and Go's, plus the hosts in GOPROXY and in apt's
// sources.
func registryHosts() []string {
	hosts := []string{"deb.debian.org", "security.debian.org", "proxy.golang.org", "sum.golang.org"}
	urlHost := regexp.MustCompile(`https?://([^/\s:]+)`)
	for _, m := range urlHost.FindAllStringSubmatch(os.Getenv("GOPROXY"), -1) {
		hosts = append(hosts, m[1])
	}
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*")
	for _, f := range append(files, "/etc/apt/sources.list") {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, m := range urlHost.FindAllStringSubmatch(string(data), -1) {
			hosts = append(hosts, m[1])
		}
	}
	slices.Sort(hosts)
	return slices.Compact(hosts)
}
