package lab

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

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
			if labkit.InRange(a) {
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
