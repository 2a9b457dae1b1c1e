package bgp

import (
	"fmt"
	"slices"
	"strings"

	"github.com/herald-lb/herald/e2e/lab"
)

// peerYAML is the BGPPeer name as the suite writes it: from the nodes'
// AS to the router's, at the router's IPv4 address, hold time 9 s,
// keepalive 3 s, connect 2 s. Each of spec ("key: value", further lines
// indented by four spaces) replaces the default line of its key or is
// added; dynamicASN takes peerASN's place (the CRD allows one of them).
func peerYAML(name string, spec ...string) string {
	lines := []string{
		fmt.Sprintf("myASN: %d", lab.NodeASN),
		fmt.Sprintf("peerASN: %d", lab.RouterASN),
		"peerAddress: " + lab.RouterIPv4,
		"holdTime: 9s",
		"keepaliveTime: 3s",
		"connectTime: 2s",
	}
	key := func(line string) string { k, _, _ := strings.Cut(line, ":"); return k }
	for _, s := range spec {
		k := key(s)
		if k == "dynamicASN" {
			k = "peerASN"
		}
		if i := slices.IndexFunc(lines, func(l string) bool { return key(l) == k }); i >= 0 {
			lines[i] = s
		} else {
			lines = append(lines, s)
		}
	}
	return fmt.Sprintf(`
apiVersion: herald.dev/v1beta1
kind: BGPPeer
metadata: {name: %s}
spec:
  %s
`, name, strings.Join(lines, "\n  "))
}
