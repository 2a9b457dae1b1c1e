package layer2

import (
	"strings"
	"testing"

	"github.com/herald-lb/herald/test/labkit"
)

// The lab: a labkit.Network (a bridge namespace and host namespaces
// "node1", "client", ... each with an eth0 veth whose peer is a port of the
// bridge). Only 198.51.100.0/24 and 2001:db8::/32 are used, and only
// inside namespaces named hl2-<pid>-<test hash>-<role>, removed when the
// test ends.

const (
	macNode1  = "02:00:00:00:00:11"
	macNode2  = "02:00:00:00:00:12"
	macClient = "02:00:00:00:01:00"
)

type lab struct{ *labkit.Network }

// newLab skips the test unless it runs as root with ping and the tools it
// names, and creates the bridge namespace.
func newLab(t testing.TB, tools ...string) *lab {
	t.Helper()
	labkit.Require(t, append([]string{"ping"}, tools...)...)
	return &lab{labkit.NewNetwork(t, "hl2")}
}

// addHost creates a host namespace plugged into the bridge by its eth0.
// With dad false, IPv6 duplicate address detection is off in it, so its
// addresses are usable at once.
func (l *lab) addHost(role, mac string, dad bool, addrs ...string) string {
	return l.AddHost(role, labkit.Host{MAC: mac, DAD: dad, Addrs: addrs})
}

// neigh returns the client's neighbour entry for ip ("" when there is none).
func (l *lab) neigh(ns, ip string) string {
	fam := "-4"
	if strings.Contains(ip, ":") {
		fam = "-6"
	}
	return strings.TrimSpace(l.IP(ns, fam, "neigh", "show", ip, "dev", "eth0"))
}

// addProbingClient adds the client with the IPv6 sources of probeBoth
// configured (its kernel must know them to receive the answers).
func (l *lab) addProbingClient() string {
	client := l.addHost("client", macClient, false, client4IP+"/25", "2001:db8:1::100/64")
	for i := range probeSources6 {
		l.AddAddr(client, probeSource6(i).String()+"/64")
	}
	return client
}
