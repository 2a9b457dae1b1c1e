package metallb

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/lab"
	labprobe "github.com/herald-lb/herald/e2e/lab/probe"
	"github.com/herald-lb/herald/test/labkit"
)

// maxBGPTakeoverGap is the longest a BGP Service's route may be missing
// from the router's FIB during the takeover: from MetalLB's last session
// closing to Herald's first being established and advertising.
const maxBGPTakeoverGap = 10 * time.Second

// splitByMode returns the distinct addresses of the L2 Services and of the
// BGP ones (bgpServices), sorted.
func splitByMode(byService map[string][]netip.Addr) (l2, bgp []netip.Addr) {
	l2s, bgps := map[string][]netip.Addr{}, map[string][]netip.Addr{}
	for name, ips := range byService {
		if strings.HasPrefix(name, "bgp-") {
			bgps[name] = ips
		} else {
			l2s[name] = ips
		}
	}
	return vips(l2s), vips(bgps)
}

// waitRouted waits until the router's FIB sends each address to want next
// hops, every one a lab node, and returns those nodes.
func waitRouted(t *testing.T, ctx context.Context, l *lab.Lab, addrs []netip.Addr, want int, who string) map[netip.Addr][]string {
	t.Helper()
	out := map[netip.Addr][]string{}
	for _, a := range addrs {
		labkit.Eventually(t, 2*time.Minute, who+"'s route to "+a.String()+" in the router's FIB", func() bool {
			hops, err := l.RouterFIB(ctx, lab.HostPrefix(a))
			if err != nil || len(hops) != want {
				return false
			}
			out[a] = nil
			for _, h := range hops {
				if h.Node == "" {
					return false
				}
				out[a] = append(out[a], h.Node)
			}
			return true
		})
	}
	return out
}

// hopWatch samples the router's FIB next hops of the BGP addresses
// during the takeover, one address every 100 ms in turn (each sample is
// an `ip route` process: 80 a second overloaded the machine), and keeps
// any next hop that leads to no lab node.
type hopWatch struct {
	mu      sync.Mutex
	strays  []string
	samples int
	stop    chan struct{}
	done    chan struct{}
}

func watchHops(ctx context.Context, l *lab.Lab, addrs []netip.Addr) *hopWatch {
	w := &hopWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; len(addrs) > 0; i++ {
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
			a := addrs[i%len(addrs)]
			hops, err := l.RouterFIB(ctx, lab.HostPrefix(a))
			w.mu.Lock()
			w.samples++
			for _, h := range hops {
				if err == nil && h.Node == "" {
					w.strays = append(w.strays, a.String()+" via "+h.Addr.String())
				}
			}
			w.mu.Unlock()
		}
		<-w.stop
	}()
	return w
}

// end stops the sampling and returns the stray next hops and how many
// samples were taken.
func (w *hopWatch) end() ([]string, int) {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.strays, w.samples
}

// reportBGP logs, for each BGP address, how long the router's FIB had no
// route for it after start (from the route monitor's events), and fails
// beyond maxBGPTakeoverGap or when a route never came back.
func reportBGP(t *testing.T, start time.Time, addrs []netip.Addr, events []lab.RouteEvent, before, after map[netip.Addr][]string) {
	t.Helper()
	var gaps []time.Duration
	for _, a := range addrs {
		gap, from, to, back := longestAbsence(events, lab.HostPrefix(a), start)
		if !back {
			t.Errorf("%s: the router's route went at %v and never came back", a, from.Sub(start).Round(time.Millisecond))
			continue
		}
		t.Logf("%-16s MetalLB via %v -> Herald via %v: no route for %v (%v to %v after the start of migrate)",
			a, before[a], after[a], gap.Round(time.Millisecond), from.Sub(start).Round(time.Millisecond), to.Sub(start).Round(time.Millisecond))
		gaps = append(gaps, gap)
		if gap > maxBGPTakeoverGap {
			t.Errorf("%s: no route for %v; want at most %v", a, gap.Round(time.Millisecond), maxBGPTakeoverGap)
		}
	}
	if len(gaps) > 0 {
		t.Logf("BGP takeover over %d addresses: no route p50 %v max %v", len(addrs), p50(gaps), slices.Max(gaps).Round(time.Millisecond))
	}
}

// longestAbsence is the longest time after start that prefix had no route
// (a Deleted event until the next install), and whether it was installed
// again after its last removal.
func longestAbsence(events []lab.RouteEvent, prefix netip.Prefix, start time.Time) (gap time.Duration, from, to time.Time, back bool) {
	back = true
	var gone time.Time
	for _, ev := range events {
		if ev.Prefix != prefix || ev.At.Before(start) {
			continue
		}
		switch {
		case ev.Deleted && back:
			gone, back = ev.At, false
		case !ev.Deleted && !back:
			back = true
			if d := ev.At.Sub(gone); d > gap {
				gap, from, to = d, gone, ev.At
			}
		}
	}
	if !back {
		from = gone
	}
	return gap, from, to, back
}

// httpEvery is how often the external client requests each BGP address.
const httpEvery = 100 * time.Millisecond

// watchHTTP starts one HTTP monitor per BGP address on the external
// client behind the router, for the traffic's view of the takeover.
func watchHTTP(t *testing.T, l *lab.Lab, addrs []netip.Addr) map[netip.Addr]*lab.HTTPMonitor {
	out := map[netip.Addr]*lab.HTTPMonitor{}
	for _, a := range addrs {
		out[a] = l.StartHTTPMonitor(t, lab.External, a, 80, httpEvery, time.Second)
	}
	return out
}

// outage is what the requests to one address saw.
type outage struct {
	gap              time.Duration
	failed, requests int
}

// outageOf: the longest time from the first failed request of a run to
// the next answered one, and the failed requests in all.
func outageOf(tries []labprobe.HTTPTry) outage {
	o := outage{requests: len(tries)}
	var from time.Time
	for _, t := range tries {
		switch {
		case !t.OK:
			o.failed++
			if from.IsZero() {
				from = t.Sent
			}
		case !from.IsZero():
			o.gap = max(o.gap, t.Sent.Sub(from))
			from = time.Time{}
		}
	}
	if !from.IsZero() {
		o.gap = max(o.gap, tries[len(tries)-1].Sent.Sub(from))
	}
	return o
}
