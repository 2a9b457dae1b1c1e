package layer2

import (
	"slices"
	"time"
)

// probeResult is one probe of probeBoth and who answered it.
type probeResult struct {
	t     time.Time // when the client's sniffer saw it leave
	proto string    // protoARP or protoNDP
	src   string
	by    map[string]time.Time // answering MAC -> first answer seen
}

// matchProbes pairs the client's probes for vip4 and vip6 with their
// answers, in the order the sniffer saw them. An answer goes to the probe's
// source address, so it belongs to the latest probe sent from there.
func matchProbes(frames []frame, vip4, vip6 string) []*probeResult {
	var probes []*probeResult
	latest := map[string]*probeResult{}
	add := func(f frame, proto, src string) {
		p := &probeResult{t: f.time(), proto: proto, src: src, by: map[string]time.Time{}}
		probes = append(probes, p)
		latest[proto+" "+src] = p
	}
	answer := func(f frame, proto, dst string) {
		if p := latest[proto+" "+dst]; p != nil {
			if _, seen := p.by[f.Src]; !seen {
				p.by[f.Src] = f.time()
			}
		}
	}
	for _, f := range frames {
		switch {
		case f.Kind == "arp-request" && f.Src == macClient && f.TPA == vip4 && f.SPA != vip4:
			add(f, protoARP, f.SPA)
		case f.Kind == "ns" && f.Src == macClient && f.Target == vip6:
			add(f, protoNDP, f.IPSrc)
		case f.Kind == "arp-reply" && f.Dst == macClient && f.SPA == vip4:
			answer(f, protoARP, f.TPA)
		case f.Kind == "na" && f.Solicited && f.Target == vip6:
			answer(f, protoNDP, f.IPDst)
		}
	}
	return probes
}

// probeCounts summarises probes.
type probeCounts struct {
	probes, unanswered, double int
	// doubles are the probes answered by more than one host.
	doubles          []*probeResult
	unansweredProbes []*probeResult
}

func countProbes(probes []*probeResult) probeCounts {
	var c probeCounts
	for _, p := range probes {
		c.probes++
		switch {
		case len(p.by) == 0:
			c.unanswered++
			c.unansweredProbes = append(c.unansweredProbes, p)
		case len(p.by) > 1:
			c.double++
			c.doubles = append(c.doubles, p)
		}
	}
	return c
}

// allAnswered reports whether every probe has an answer.
func allAnswered(probes []*probeResult) bool {
	for _, p := range probes {
		if len(p.by) == 0 {
			return false
		}
	}
	return true
}

// durationStats returns the minimum, median and maximum of ds.
func durationStats(ds []time.Duration) (lo, med, hi time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[0], s[len(s)/2], s[len(s)-1]
}
