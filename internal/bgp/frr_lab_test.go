package bgp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// The FRR lab: three network namespaces of a labkit.Network:
//
//	speaker ns  eth0 198.51.100.11/24, .12/24, 2001:db8:1::11/64
//	      |
//	switch ns   br0 (so that a link going down on the speaker side does
//	      |     not take the router's carrier down: BFD must notice)
//	router ns   eth0 198.51.100.1/24, .2/24, 2001:db8:1::1/64; FRR zebra, bgpd, bfdd
//
// The speaker runs in a child test process started with `ip netns exec` in
// the speaker namespace (a Go process cannot move all its threads to
// another network namespace). Nothing touches the root namespace.

const frrEnv = "HERALD_BGP_FRR_LAB"

// frrLab is what the child needs to know, passed as JSON in frrEnv.
type frrLab struct {
	VtyDir string // vtysh --vty_socket
}

const frrConf = `frr defaults datacenter
hostname herald-bgp-test-router
log file %[1]s/frr.log
!
bfd
 profile fast
  detect-multiplier 3
  receive-interval 100
  transmit-interval 100
 exit
exit
!
router bgp 64513
 bgp router-id 198.51.100.1
 no bgp ebgp-requires-policy
 no bgp default ipv4-unicast
 neighbor 198.51.100.11 remote-as 64512
 neighbor 198.51.100.11 bfd
 neighbor 198.51.100.11 bfd profile fast
 neighbor 198.51.100.12 remote-as 64512
 neighbor 198.51.100.12 password herald-secret
 address-family ipv4 unicast
  neighbor 198.51.100.11 activate
  neighbor 198.51.100.12 activate
 exit-address-family
 address-family ipv6 unicast
  neighbor 198.51.100.11 activate
 exit-address-family
exit
`

func TestFRR(t *testing.T) {
	if os.Getenv(frrEnv) != "" {
		t.Skip("in the child process")
	}
	labkit.RequireFRR(t)
	n := labkit.NewNetwork(t, "hbgp")
	// keep_addr_on_down: the speaker's addresses survive its link going
	// down and up (checkBFD, checkLinkBackAndShutdown).
	keep := []string{"net.ipv6.conf.all.keep_addr_on_down=1"}
	spk := n.AddHost("spk", labkit.Host{Port: "p-spk", Sysctls: keep,
		Addrs: []string{"198.51.100.11/24", "198.51.100.12/24", "2001:db8:1::11/64"}})
	rtr := n.AddHost("rtr", labkit.Host{Port: "p-rtr", Sysctls: keep,
		Addrs: []string{"198.51.100.1/24", "198.51.100.2/24", "2001:db8:1::1/64"}})
	dir := fmt.Sprintf("/run/hbgp%d-frr", os.Getpid())
	n.StartFRR(rtr, dir, fmt.Sprintf(frrConf, dir))
	env, err := json.Marshal(frrLab{VtyDir: dir})
	must(t, err)
	runChild(t, n, spk, "TestFRRSpeakerSide", 4*time.Minute, frrEnv+"="+string(env), nil)
}

// runChild runs the speaker-side test named test in namespace ns, for at
// most timeout, with env (NAME=value) added to its environment, hands each
// line of its output to onLine (nil: the test log) and fails if it failed.
func runChild(t testing.TB, n *labkit.Network, ns, test string, timeout time.Duration, env string, onLine func(string)) {
	t.Helper()
	argv, err := labkit.TestBinary(test, "-test.v", "-test.count=1", "-test.timeout="+timeout.String())
	must(t, err)
	if onLine == nil {
		onLine = func(line string) { t.Log(line) }
	}
	p := n.Start(ns, labkit.ProcessOptions{Name: "speaker side", Argv: argv, Env: []string{env},
		Grace: 5 * time.Second, Stdout: func(r io.Reader) {
			sc := bufio.NewScanner(r)
			for sc.Scan() {
				onLine(sc.Text())
			}
		}})
	if err := p.Wait(); err != nil {
		t.Fatalf("%s in %s: %v", test, ns, err)
	}
}
