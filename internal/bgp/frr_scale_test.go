package bgp

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// frrScaleEnv carries a frrScale to the speaker side of the benchmark.
const frrScaleEnv = "HERALD_BGP_FRR_SCALE"

// frrScale is what the speaker side needs, and the figures it measured.
type frrScale struct {
	VtyDir   string
	Prefixes int
	// measured, in seconds
	Apply, ToBGP, ToFIB, WithdrawApply, WithdrawnBGP, WithdrawnFIB float64
}

const frrScaleConf = `frr defaults datacenter
hostname herald-bgp-scale-router
log file %[1]s/frr.log
!
router bgp 64513
 bgp router-id 198.51.100.1
 no bgp ebgp-requires-policy
 no bgp default ipv4-unicast
 neighbor 198.51.100.11 remote-as 64512
 address-family ipv6 unicast
  neighbor 198.51.100.11 activate
 exit-address-family
exit
`

// scaleResult is the line the speaker side prints its figures on.
const scaleResult = "herald-frr-scale: "

// BenchmarkFRRPrefixes: one speaker advertises 10,000 /128 routes
// (HERALD_FRR_PREFIXES overrides) in one Apply over an established
// session to FRR, which installs them in its namespace's kernel; printed:
// the Apply, until FRR's BGP table has them all, until zebra has them all
// in the FIB, and the same for withdrawing them all. This is bound by the
// router; the speaker's own share is the Apply.
//
// Run it with: go test -run '^$' -bench FRRPrefixes -benchtime 1x ./internal/bgp/
func BenchmarkFRRPrefixes(b *testing.B) {
	if os.Getenv(frrScaleEnv) != "" {
		b.Skip("in the child process")
	}
	labkit.RequireFRR(b)
	prefixes := 10000
	if v := os.Getenv("HERALD_FRR_PREFIXES"); v != "" {
		if _, err := fmt.Sscan(v, &prefixes); err != nil || prefixes < 1 || prefixes > 65535 {
			b.Fatalf("HERALD_FRR_PREFIXES=%q: want 1 to 65535", v)
		}
	}
	for range b.N {
		got := runScaleLab(b, prefixes)
		b.ReportMetric(got.Apply, "s-apply")
		b.ReportMetric(got.ToBGP, "s-to-frr-bgp")
		b.ReportMetric(got.ToFIB, "s-to-frr-fib")
		b.ReportMetric(got.WithdrawnFIB, "s-withdrawn-fib")
		fmt.Printf("%d prefixes: Apply %.3f s; in FRR's BGP table %.3f s, in its FIB %.3f s after the Apply began; "+
			"withdrawing all: Apply %.3f s, gone from BGP %.3f s, from the FIB %.3f s\n",
			prefixes, got.Apply, got.ToBGP, got.ToFIB, got.WithdrawApply, got.WithdrawnBGP, got.WithdrawnFIB)
	}
}

// runScaleLab brings up a speaker namespace and an FRR router on one
// segment, runs the speaker side there and returns its figures.
func runScaleLab(b *testing.B, prefixes int) frrScale {
	n := labkit.NewNetwork(b, "hbgs")
	spk := n.AddHost("spk", labkit.Host{Port: "p-spk", Addrs: []string{"198.51.100.11/24", "2001:db8:1::11/64"}})
	rtr := n.AddHost("rtr", labkit.Host{Port: "p-rtr", Addrs: []string{"198.51.100.1/24", "2001:db8:1::1/64"}})
	dir := fmt.Sprintf("/run/hbgs%d-frr", os.Getpid())
	n.StartFRR(rtr, dir, fmt.Sprintf(frrScaleConf, dir))
	env, err := json.Marshal(frrScale{VtyDir: dir, Prefixes: prefixes})
	must(b, err)
	var got *frrScale
	runChild(b, n, spk, "TestFRRScaleSide", 10*time.Minute, frrScaleEnv+"="+string(env), func(line string) {
		if raw, ok := strings.CutPrefix(line, scaleResult); ok {
			var f frrScale
			if err := json.Unmarshal([]byte(raw), &f); err == nil {
				got = &f
			}
		}
		b.Log(line)
	})
	if got == nil {
		b.Fatalf("the speaker side in %s printed no figures", spk)
	}
	n.Close()
	return *got
}

// TestFRRScaleSide is the speaker half of BenchmarkFRRPrefixes; it runs
// only in the child process the benchmark starts.
func TestFRRScaleSide(t *testing.T) {
	raw := os.Getenv(frrScaleEnv)
	if raw == "" {
		t.Skip("run by BenchmarkFRRPrefixes in its lab")
	}
	var lab frrScale
	must(t, json.Unmarshal([]byte(raw), &lab))
	f := frr{t: t, dir: lab.VtyDir}
	s, _ := newTestSpeaker(t, nil)
	d := Desired{NodeIPv4: netip.MustParseAddr("198.51.100.11"), NodeIPv6: netip.MustParseAddr("2001:db8:1::11"),
		Sessions: []Session{{Name: "rtr", PeerAddress: netip.MustParseAddr("198.51.100.1"), MyASN: speakerASN, PeerASN: routerASN,
			HoldTime: 9 * time.Second, ConnectTime: time.Second, Families: []Family{IPv6Unicast}}}}
	apply(t, s, d)
	waitUp(t, s, "rtr")
	labkit.EventuallyWhy(t, waitLong, "FRR sees the session Established", func() (bool, string) {
		st := f.neighbor("198.51.100.11").BgpState
		return st == "Established", st
	})
	base := netip.MustParseAddr("2001:db8:ff::").As16()
	for i := range lab.Prefixes {
		a := base
		a[14], a[15] = byte(i>>8), byte(i)
		d.Paths = append(d.Paths, Path{Prefix: netip.PrefixFrom(netip.AddrFrom16(a), 128)})
	}
	lab.Apply, lab.ToBGP, lab.ToFIB = f.timeTo(t, s, d, lab.Prefixes)
	d.Paths = nil
	lab.WithdrawApply, lab.WithdrawnBGP, lab.WithdrawnFIB = f.timeTo(t, s, d, 0)
	out, err := json.Marshal(lab)
	must(t, err)
	fmt.Println(scaleResult + string(out))
}

// timeTo applies d and returns how long the Apply took and how long,
// from its start, until FRR's BGP table and then its FIB held want
// routes from the speaker.
func (f frr) timeTo(t *testing.T, s *Speaker, d Desired, want int) (applied, bgp, fib float64) {
	t.Helper()
	start := time.Now()
	apply(t, s, d)
	applied = time.Since(start).Seconds()
	labkit.EventuallyWhy(t, 5*time.Minute, fmt.Sprintf("FRR's BGP table holds %d prefixes from the speaker", want), func() (bool, string) {
		got := f.received("198.51.100.11")
		return got == want, fmt.Sprintf("%d", got)
	})
	bgp = time.Since(start).Seconds()
	labkit.EventuallyWhy(t, 5*time.Minute, fmt.Sprintf("zebra's FIB holds %d BGP routes", want), func() (bool, string) {
		got := f.fibBGP()
		return got == want, fmt.Sprintf("%d", got)
	})
	return applied, bgp, time.Since(start).Seconds()
}

// received is how many IPv6 prefixes FRR accepted from a neighbor.
func (f frr) received(peer string) int {
	var sum struct {
		Peers map[string]struct {
			PfxRcd int `json:"pfxRcd"`
		} `json:"peers"`
	}
	if err := f.json(&sum, "show bgp ipv6 unicast summary json"); err != nil {
		f.t.Fatal(err)
	}
	return sum.Peers[peer].PfxRcd
}

// fibBGP is how many IPv6 BGP routes zebra installed in the kernel.
func (f frr) fibBGP() int {
	var sum struct {
		Routes []struct {
			Type string `json:"type"`
			FIB  int    `json:"fib"`
		} `json:"routes"`
	}
	if err := f.json(&sum, "show ipv6 route summary json"); err != nil {
		f.t.Fatal(err)
	}
	for _, r := range sum.Routes {
		if r.Type == "ebgp" || r.Type == "bgp" {
			return r.FIB
		}
	}
	return 0
}
