package layer2

import (
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// lateAnswer is the delay, from the kernel receiving a request to the
// answer being sent, past which an answer counts as late. A client gives
// up on an ARP request after about a second; a tenth of that is already a
// speaker that was not scheduled, not one that was busy.
const lateAnswer = 100 * time.Millisecond

// lateReportEvery bounds the warnings about late answers: a starved
// speaker answers late many times a second.
const lateReportEvery = 10 * time.Second

// answerDelays records how long answers took from the request's arrival
// (herald_l2_answer_delay_seconds) and warns, at most every
// lateReportEvery, when some were late.
type answerDelays struct {
	log     *slog.Logger
	observe prometheus.Observer

	mu       sync.Mutex
	reported time.Time
	late     int
	worst    time.Duration
	worstVIP netip.Addr
}

func newAnswerDelays(log *slog.Logger, observe prometheus.Observer) *answerDelays {
	return &answerDelays{log: log, observe: observe}
}

// answered records an answer for vip, sent now, to a request the kernel
// received at received.
func (d *answerDelays) answered(vip netip.Addr, received time.Time) {
	if d == nil || received.IsZero() {
		return
	}
	delay := max(time.Since(received), 0)
	d.observe.Observe(delay.Seconds())
	if delay < lateAnswer {
		return
	}
	d.mu.Lock()
	d.late++
	if delay > d.worst {
		d.worst, d.worstVIP = delay, vip
	}
	now := time.Now()
	if now.Sub(d.reported) < lateReportEvery {
		d.mu.Unlock()
		return
	}
	late, worst, worstVIP := d.late, d.worst, d.worstVIP
	d.reported, d.late, d.worst = now, 0, 0
	d.mu.Unlock()
	d.log.Warn("answers sent late: the speaker was not scheduled in time (CPU starvation or a stalled process; see herald_l2_answer_delay_seconds)",
		"late", late, "threshold", lateAnswer, "worst", worst.Round(time.Millisecond), "worstIP", worstVIP)
}
